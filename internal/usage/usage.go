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

// FieldError is bad input in one field of a domain value (a lab.Spec's
// MTU, an autotune.Config's Rounds). The domain package names the field;
// a command that filled the field from a flag names the flag (Flags), so
// that the user reads the flag they gave.
type FieldError struct {
	Field string // the field, as the domain package names it: "MTU"
	Flag  string // the flag that set it, once a command says: "--mtu"
	Err   error  // what is wrong, worded to follow the name: "67: want 68 to 65535"
}

func (e *FieldError) Error() string {
	name := e.Field
	if e.Flag != "" {
		name = e.Flag
	}
	return name + " " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// Field is bad input in field: its message is the field's name, a space
// and what format says.
func Field(field, format string, args ...any) error {
	return &Error{Err: &FieldError{Field: field, Err: fmt.Errorf(format, args...)}}
}

// Flags names the flag of the field err is about, when flags (field to
// flag, dashes included) has it, and returns err: its message then starts
// with the flag. Call it on the error as the domain package returned it:
// fmt.Errorf fixes its text when called, so a field error it wrapped
// keeps its field's name.
func Flags(err error, flags map[string]string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		if f, ok := flags[fe.Field]; ok {
			fe.Flag = f
		}
	}
	return err
}
