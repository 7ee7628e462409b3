// go_trace.go - a Go program whose goroutines each write their own id
// (runtime.Stack's "goroutine N [running]") to standard output every
// 50 ms, for `stacksnap trace` of a Go program (tests/integration/
// go_trace): each write(2) event must name the goroutine that made it.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	id, _ := strconv.Atoi(f[1])
	return id
}

//go:noinline
func writer() {
	line := []byte(fmt.Sprintf("goid %d\n", goid()))
	for {
		os.Stdout.Write(line)
		time.Sleep(50 * time.Millisecond)
	}
}

func main() {
	for i := 0; i < 3; i++ {
		go writer()
	}
	select {}
}
