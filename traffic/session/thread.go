package session

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadUsage returns the calling thread's CPU time.
func ThreadUsage() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Preemptions returns the calling thread's involuntary context switches.
func Preemptions() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return int64(ru.Nivcsw)
}

// Pin binds the calling (locked) thread to cpu; -1 leaves it free.
func Pin(cpu int) error {
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to cpu %d: %w", cpu, err)
	}
	return nil
}
