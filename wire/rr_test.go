package wire

import (
	"errors"
	"testing"
	"time"

	"linerate/internal/usage"
)

func TestRRCheck(t *testing.T) {
	good := func() Spec {
		return Spec{Proto: TCP, Direction: Forward, Duration: Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1,
			RR: &RR{Request: 1, Response: 1, Timeout: Seconds(time.Second)}}
	}
	for _, c := range []struct {
		field string // "" for a spec that is fine
		edit  func(*Spec)
	}{
		{"", func(*Spec) {}},
		{"", func(s *Spec) { s.Proto = UDP }},
		{"", func(s *Spec) { s.RR.Connect = true }},
		{"request", func(s *Spec) { s.RR.Request = 0 }},
		{"response", func(s *Spec) { s.RR.Response = MaxRRSize + 1 }},
		{"timeout", func(s *Spec) { s.RR.Timeout = 0 }},
		{"connect", func(s *Spec) { s.Proto, s.RR.Connect = UDP, true }},
		{"direction", func(s *Spec) { s.Direction = Reverse }},
		{"warmup", func(s *Spec) { s.Warmup = Seconds(time.Second) }},
		{"probe_interval", func(s *Spec) { s.ProbeInterval = Seconds(time.Second) }},
		{"ports", func(s *Spec) { s.Ports = 2 }},
		{"rate", func(s *Spec) { s.Rate = Rate{PPS: 10} }},
	} {
		s := good()
		c.edit(&s)
		err := s.Check()
		var fe *usage.FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", s.RR, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("want an error of %s, got %v", c.field, err)
		}
	}
}
