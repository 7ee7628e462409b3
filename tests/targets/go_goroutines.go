// go_goroutines.go - a Go program whose goroutines park in known places
// (chan receive two calls deep, an inlined receive, select, sync.Mutex,
// WaitGroup under a 20-deep recursion, time.Sleep, a loopback read) beside
// a busy one, for the goroutine and pclntab tests. Prints "ready PID".
package main

import (
	"fmt"
	"net"
	"os"
	"runtime"
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
func netReader(c net.Conn) {
	buf := make([]byte, 16)
	c.Read(buf)
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
	go recvOuter(c1)
	go recvViaInline(c3)
	go selectWait(c1, c2)
	mu.Lock()
	go lockWait()
	wg.Add(1)
	go recurse(20)
	go sleeper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			netReader(conn)
		}
	}()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	_ = cl
	go busy()
	runtime.Gosched()
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(os.Stdout, "ready", os.Getpid())
	select {}
}
