// go_stacks.go - a Go program of a known number of threads (GOMAXPROCS
// 4: parked Ms, sysmon, a busy goroutine with an inlined leaf, goroutines
// parked on a channel and a mutex) for the thread-stack tests: how much of
// each stack a capture copies, where a system stack ends, a cgo build's
// threads. Prints "ready PID".
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

var sink int

// busyLeaf is inlined into busy (small, no loop calls).
func busyLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (i >> 3)
	}
	return s
}

//go:noinline
func busy() {
	for {
		sink += busyLeaf(1000000)
	}
}

func main() {
	runtime.GOMAXPROCS(4)
	var mu sync.Mutex
	mu.Lock()
	ch := make(chan int)
	for i := 0; i < 3; i++ {
		go func() { <-ch }()
		go func() { mu.Lock() }()
	}
	// Goroutines started from goroutines on every P: runtime.newproc
	// runs on each M's system stack (g0), and its words stay there,
	// above where runtime.mcall later switches to g0.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				go func() { sink++ }()
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	go busy()
	time.Sleep(300 * time.Millisecond)
	fmt.Println("ready", os.Getpid())
	time.Sleep(600 * time.Second)
}
