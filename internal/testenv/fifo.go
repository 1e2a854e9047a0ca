package testenv

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FIFO makes a named pipe at path and reads it until what was read ends
// with end, or for at most wait: the returned function gives what it read.
// The pipe is opened for reading and writing, so neither this open nor a
// writer's blocks, and a writer that never comes (a program that replaced
// the pipe instead) leaves the test with what it read, not hanging.
func FIFO(t testing.TB, path, end string, wait time.Duration) func() string {
	t.Helper()
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, 64<<10)
		for !bytes.HasSuffix(b, []byte(end)) {
			n, err := f.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- b
	}()
	return func() string { return string(<-got) }
}
