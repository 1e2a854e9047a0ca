package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/usage"
)

// A capture written to a file: a tarball that reads back, a directory; a
// directory that is not empty refused as bad input on Path; a capture
// that fails leaves no half tarball.
func TestWriteCaptureFile(t *testing.T) {
	src, err := OpenCapture(thisMachine)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts := CaptureOptions{EthtoolCmd: "-", IPCmd: "-"}
	tmp := t.TempDir()
	tgz := filepath.Join(tmp, "box.tgz")
	if err := WriteCaptureFile(context.Background(), src, tgz, opts); err != nil {
		t.Fatal(err)
	}
	back, err := OpenCapture(tgz)
	if err != nil {
		t.Fatalf("the tarball does not read back: %v", err)
	}
	back.Close()
	dir := filepath.Join(tmp, "dir")
	if err := WriteCaptureFile(context.Background(), src, dir, opts); err != nil {
		t.Fatal(err)
	}
	var fe *usage.FieldError
	if err := WriteCaptureFile(context.Background(), src, dir, opts); !errors.As(err, &fe) || fe.Field != "Path" || !strings.Contains(err.Error(), "directory not empty") {
		t.Errorf("into a directory not empty: %v, want a field error on Path", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	half := filepath.Join(tmp, "half.tar.gz")
	if err := WriteCaptureFile(ctx, src, half, CaptureOptions{Samples: 2, Interval: time.Second}); err == nil {
		t.Fatal("a capture whose context ended: no error")
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("half a tarball left: %v", err)
	}
}

func TestCheckIfacesAndName(t *testing.T) {
	src, err := OpenCapture(thisMachine)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	have, err := src.Sys().NetDevices()
	if err != nil || len(have) == 0 {
		t.Fatal(have, err)
	}
	if err := CheckIfaces(src, have[:1]); err != nil {
		t.Errorf("%s: %v", have[0], err)
	}
	if err := CheckIfaces(src, []string{"nosuch0"}); !usage.Is(err) || !strings.Contains(err.Error(), "no interface nosuch0 (have: "+have[0]) {
		t.Errorf("nosuch0: %v", err)
	}
	m := Meta{Host: "routerpi", Time: time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)}
	if got := CaptureName(m); got != "linerate-capture-routerpi-20261129T010203Z.tar.gz" {
		t.Errorf("CaptureName = %q", got)
	}
	if got := CaptureName(Meta{Time: m.Time}); !strings.HasPrefix(got, "linerate-capture-box-") {
		t.Errorf("CaptureName without a host = %q", got)
	}
}
