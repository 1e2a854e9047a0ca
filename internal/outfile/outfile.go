// Package outfile writes a file a user named as a command's output
// (`report -o`, `demo --report`, `run --prometheus-targets`).
//
// Where the path is a regular file, or nothing, the output is written
// beside it to a temporary file, synced, and renamed over it: a reader
// never sees half of it, and a failed write leaves the old file. Anything
// else is written to as it is, as a shell's `>` would: a character device
// (/dev/null, a terminal), a named pipe, or a symbolic link (/dev/stdout is
// one), so that no device or link is ever replaced by a regular file.
package outfile

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"linerate/internal/usage"
)

// defaultMode is the mode of a file that was not there.
const defaultMode fs.FileMode = 0o644

// Write writes the output that write produces to path. A path that cannot
// take it (a directory, no such directory, not writable) is bad input
// (usage); a failed write is an error (a device that is full: ENOSPC).
// Errors do not name the path: the caller says which flag gave it.
func Write(path string, write func(io.Writer) error) error {
	if path == "" {
		return usage.Errorf("no file named")
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return replace(path, defaultMode, write)
	case err != nil:
		return usage.Wrap(bare(err))
	case st.Mode().IsRegular():
		return replace(path, st.Mode().Perm(), write)
	case st.IsDir():
		return usage.Errorf("is a directory")
	}
	return inPlace(path, write)
}

// replace writes through a temporary file in path's directory, synced
// before it is renamed over path, and syncs the directory after.
func replace(path string, mode fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		// A directory that is not there or not writable: the path is
		// wrong.
		return usage.Errorf("cannot write in %s: %w", dir, bare(err))
	}
	defer os.Remove(tmp.Name())
	err = errors.Join(written(tmp, write), tmp.Chmod(mode), tmp.Sync())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return bare(err)
	}
	return syncDir(dir)
}

// inPlace writes to what path is now, following links, creating nothing:
// a link that leads nowhere is an error, not a new file at its target.
// O_TRUNC has no effect on a device or a pipe.
func inPlace(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return usage.Wrap(bare(err))
	}
	err = written(f, write)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// written runs write over a buffer on f and flushes it. The buffer keeps
// the first write error and returns it from then on, so a write that
// fails (ENOSPC) is reported even when write drops the errors of its
// Fprintf calls.
func written(f *os.File, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 64<<10)
	werr := write(bw)
	ferr := bw.Flush()
	if ferr != nil {
		return ferr
	}
	return werr
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some filesystems cannot sync a directory; the rename is done.
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}

// bare is err without the operation and path a *fs.PathError or
// *os.LinkError adds: the caller names the path as the user gave it, and
// a temporary file's name would only confuse.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
