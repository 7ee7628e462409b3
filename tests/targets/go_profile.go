// go_profile.go - a Go program whose goroutines park in known places in
// known numbers (5 in a chan receive two calls deep, 2 through an inlined
// receive, 3 in select, 4 on a sync.Mutex, 2 in WaitGroup under a 20-deep
// recursion, 3 in time.Sleep, 2 under pprof.Do labels) beside a busy one,
// for `stacksnap profile --goroutines` (tests/integration/go_profile). Once
// every goroutine has parked it writes the runtime's own goroutine profile
// (pprof.Lookup("goroutine").WriteTo(os.Stdout, 1)), prints "ready PID"
// and idles.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

var mu sync.Mutex
var wg sync.WaitGroup
var sink int

//go:noinline
func recvDeep(c chan int) int { return <-c }

//go:noinline
func recvOuter(c chan int) int { return recvDeep(c) + 1 }

func inlinedRecv(c chan int) int { return <-c }

//go:noinline
func recvViaInline(c chan int) int { return inlinedRecv(c) * 2 }

//go:noinline
func selectWait(a, b chan int) int {
	select {
	case v := <-a:
		return v
	case v := <-b:
		return v
	}
}

//go:noinline
func lockWait() { mu.Lock(); sink++; mu.Unlock() }

//go:noinline
func recurse(n int) int {
	if n == 0 {
		wg.Wait()
		return 0
	}
	return recurse(n-1) + 1
}

//go:noinline
func sleeper() { time.Sleep(time.Hour) }

//go:noinline
func labelled(c chan int) {
	pprof.Do(context.Background(), pprof.Labels("worker", "labelled"),
		func(context.Context) { recvDeep(c) })
}

//go:noinline
func busy() {
	x := 0
	for {
		x++
		if x%1000000 == 0 {
			sink = x
		}
	}
}

func main() {
	c1 := make(chan int)
	c2 := make(chan int)
	c3 := make(chan int)
	for i := 0; i < 5; i++ {
		go recvOuter(c1)
	}
	for i := 0; i < 2; i++ {
		go recvViaInline(c3)
	}
	for i := 0; i < 3; i++ {
		go selectWait(c1, c2)
	}
	mu.Lock()
	for i := 0; i < 4; i++ {
		go lockWait()
	}
	wg.Add(1)
	for i := 0; i < 2; i++ {
		go recurse(20)
	}
	for i := 0; i < 3; i++ {
		go sleeper()
	}
	for i := 0; i < 2; i++ {
		go labelled(c3)
	}
	go busy()
	time.Sleep(300 * time.Millisecond)
	pprof.Lookup("goroutine").WriteTo(os.Stdout, 1)
	fmt.Fprintln(os.Stdout, "ready", os.Getpid())
	select {}
}
