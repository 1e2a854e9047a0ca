// Package usage marks errors caused by what the user asked for (a bad flag,
// an unknown interface, a corrupt capture) so the command line can exit with
// code 2 for them and 1 for failures of the machine or the network.
package usage

import (
	"errors"
	"fmt"
)

// Error is bad input. Its message is the one line the user sees.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf formats a bad-input error; %w wraps as with fmt.Errorf.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Wrap marks err as bad input; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Is reports whether err (or anything it wraps) is bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
