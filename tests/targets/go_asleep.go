// go_asleep.go - a Go program whose goroutines all wait for each other
// (the waits_go test): one on a sync.Mutex main holds, one on a
// WaitGroup, one on a channel receive, one in a select, one on a channel
// send, main on a channel receive. os/signal's loop (signal.Notify) keeps
// the runtime's own check from aborting it with "all goroutines are
// asleep - deadlock!". With "busy", one more goroutine spins: not asleep.
// Three more goroutines receive on one channel (a group), one sends to a
// full buffered channel. With $GO_ASLEEP_OBJECTS set, writes "NAME %p" of
// every channel (and its %T), the Mutex and the WaitGroup there before
// they block (the waits_go test's truth). Prints "ready PID".
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
	"sync"
)

var mu sync.Mutex
var wg sync.WaitGroup
var sink int

//go:noinline
func lockWait() { mu.Lock(); sink++; mu.Unlock() }

//go:noinline
func groupWait() { wg.Wait() }

//go:noinline
func recvWait(c chan int) { sink += <-c }

//go:noinline
func sendWait(c chan int) { c <- 1 }

//go:noinline
func groupRecv(c chan string) { sink += len(<-c) }

//go:noinline
func fullSend(c chan *int) { c <- &sink }

//go:noinline
func selectWait(a, b chan int) {
	select {
	case v := <-a:
		sink += v
	case v := <-b:
		sink += v
	}
}

//go:noinline
func busy() {
	for {
		sink++
	}
}

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	a, b, c, d := make(chan int), make(chan int), make(chan int), make(chan int)
	e, f, m := make(chan string), make(chan *int, 1), make(chan int)
	f <- &sink
	if path := os.Getenv("GO_ASLEEP_OBJECTS"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(out, "mu %p\nwg %p\n", &mu, &wg)
		for i, ch := range []interface{}{a, b, c, d, e, f, m} {
			fmt.Fprintf(out, "%c %p %T\n", "abcdefm"[i], ch, ch)
		}
		out.Close()
	}
	mu.Lock()
	wg.Add(1)
	go lockWait()
	go groupWait()
	go recvWait(a)
	go selectWait(b, c)
	go sendWait(d)
	for i := 0; i < 3; i++ {
		go groupRecv(e)
	}
	go fullSend(f)
	if len(os.Args) > 1 && os.Args[1] == "busy" {
		go busy()
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(os.Stdout, "ready", os.Getpid())
	<-m
}
