package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"linerate/internal/usage"
)

// CaptureName is where a capture of the box m describes goes when no path
// is given: linerate-capture-HOST-TIME.tar.gz in the current directory.
func CaptureName(m Meta) string {
	host := m.Host
	if host == "" {
		host = "box"
	}
	return fmt.Sprintf("linerate-capture-%s-%s.tar.gz", host, m.Time.UTC().Format("20060102T150405Z"))
}

// CheckIfaces refuses, as bad input, a name that is no interface of src,
// saying which it has.
func CheckIfaces(src Source, names []string) error {
	if len(names) == 0 {
		return nil
	}
	have, err := src.Sys().NetDevices()
	if err != nil {
		return err
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return usage.Errorf("no interface %s (have: %s)", n, strings.Join(have, ", "))
		}
	}
	return nil
}

// WriteCaptureFile records src (WriteCapture) into path: a gzipped
// tarball when it ends in .tar.gz or .tgz, whose top directory is its
// name without them, else a directory, which must not exist or be empty.
// A capture that fails leaves no half tarball behind. A path that cannot
// be made is a usage.FieldError on Path.
func WriteCaptureFile(ctx context.Context, src Source, path string, opts CaptureOptions) error {
	tarball := strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz")
	var sink Sink
	var file *os.File
	var err error
	if tarball {
		if file, err = os.Create(path); err != nil {
			return usage.Field("Path", "%s: %w", path, pathReason(err))
		}
		top := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".tar.gz"), ".tgz")
		sink = TarSink(file, top)
	} else if sink, err = DirSink(path); err != nil {
		return usage.Field("Path", "%s: %w", path, pathReason(err))
	}
	werr := WriteCapture(ctx, src, sink, opts)
	cerr := sink.Close()
	if file != nil {
		if err := file.Close(); cerr == nil {
			cerr = err
		}
	}
	if werr == nil && cerr == nil {
		return nil
	}
	if tarball {
		os.Remove(path) // half a tarball is worse than none
	}
	if werr != nil {
		return fmt.Errorf("capture to %s: %w", path, werr)
	}
	return fmt.Errorf("capture to %s: %w", path, cerr)
}

// pathReason keeps the reason of an *fs.PathError, whose path the message
// already names.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
