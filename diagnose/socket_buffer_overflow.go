package diagnose

import (
	"fmt"
	"strconv"

	"linerate/internal/units"
)

// socketBufferOverflow: UDP datagrams dropped because a socket's receive
// buffer was full (Udp RcvbufErrors rising) → rmem_max / SO_RCVBUF.
type socketBufferOverflow struct{}

func (socketBufferOverflow) ID() string { return "socket-buffer-overflow" }
func (socketBufferOverflow) Explain() string {
	return "UDP RcvbufErrors rising: the application does not drain its socket fast enough"
}

func (socketBufferOverflow) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	errs := m.UDP["RcvbufErrors"]
	if errs <= 0 {
		return nil
	}
	in := m.UDP["InDatagrams"]
	rmax, _ := ev.Box.Sysctl("net.core.rmem_max")
	rdef, _ := ev.Box.Sysctl("net.core.rmem_default")
	f := Finding{
		Severity: Warning, Subject: "box",
		Summary: fmt.Sprintf("%s UDP datagrams dropped at full socket buffers (%s of %s delivered)", rate(errs), units.Percent(errs/max(errs+in, 1), 1), rate(in)),
		Evidence: []string{
			fmt.Sprintf("Udp RcvbufErrors %s, InErrors %s, InDatagrams %s", rate(errs), rate(m.UDP["InErrors"]), rate(in)),
			"net.core.rmem_max = " + rmax + ", net.core.rmem_default = " + rdef,
		},
	}
	want := 8 << 20
	if cur, err := strconv.Atoi(rmax); err == nil && cur >= want {
		want = cur * 2
	}
	f.Fixes = append(f.Fixes,
		Fix{Kind: FixSysctl, Target: "net.core.rmem_max", Value: strconv.Itoa(want), Note: "let receivers ask for bigger buffers (SO_RCVBUF)"},
		Fix{Kind: FixSysctl, Target: "net.core.rmem_default", Value: strconv.Itoa(want / 4), Note: "bigger buffers for sockets that don't ask"})
	return []Finding{f}
}
