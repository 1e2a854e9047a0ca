package netnsread

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/source"
)

// TestReaderHost reads the drop counters of the process's own
// namespace (reading only) and finds its loopback and its inode.
func TestReaderHost(t *testing.T) {
	testenv.RequireRoot(t)
	src, err := source.NewLive()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r, err := New(src, Options{ReasonsUnavailable: "not asked for"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := r.Drops()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if ino := fi.Sys().(*syscall.Stat_t).Ino; d.Netns != ino {
		t.Errorf("netns %d, want %d", d.Netns, ino)
	}
	if lo, ok := d.Links["lo"]; !ok || !lo.Loopback {
		t.Errorf("no loopback in %v", d.Links)
	}
	if d.Machine == "" || d.SNMP["Udp"] == nil || d.Unavailable[box.SourceReasons] != "not asked for" {
		t.Errorf("machine %q, udp %v, unavailable %v", d.Machine, d.SNMP["Udp"], d.Unavailable)
	}
	// A capture has no namespace to open.
	capture, err := source.OpenCapture("../../testdata/captures/this-machine")
	if err != nil {
		t.Fatal(err)
	}
	defer capture.Close()
	if _, err := New(capture, Options{}); !errors.Is(err, source.ErrNotLive) {
		t.Errorf("a capture: %v, want ErrNotLive", err)
	}
}
