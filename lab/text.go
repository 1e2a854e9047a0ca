package lab

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"linerate/lab/vm"
)

// Status is "up", "building" (its Up still runs) or "incomplete" (its Up
// died or failed half way: lab down removes what it made).
func (l *Lab) Status() string {
	switch {
	case l.Partial != "":
		return "partial"
	case l.Complete:
		return "up"
	case l.Building():
		return "building"
	}
	return "incomplete"
}

// Describe writes the lab's address plan: one line per interface of each
// node, with its namespace, address, default route and role.
func (l *Lab) Describe(w io.Writer) error {
	topo := l.Spec.Topology
	if topo == Star {
		topo = fmt.Sprintf("star of %d", l.Spec.Ports)
	}
	fmt.Fprintf(w, "lab %s (%s): %s; %s\n", l.Spec.Name, topo, l.Status(), l.Spec)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tNETNS\tIFACE\tADDRESS\tPEER\tDEFAULT ROUTE\tROLE")
	for _, n := range l.Nodes {
		gw := "-"
		if n.Gateway.IsValid() {
			gw = "via " + n.Gateway.String()
		}
		var role []string
		if n.Forward {
			role = append(role, "forwards")
		}
		if n.Masquerade != "" {
			role = append(role, "NAT out of "+n.Masquerade)
		}
		if l.IsVM(n.Name) {
			role = append([]string{"guest"}, role...)
		}
		r := strings.Join(role, ", ")
		for i, f := range n.Ifaces {
			name, ns := n.Name, n.Netns
			if i > 0 {
				name, ns, gw, r = "", "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, ns, f.Name, f.Addr, f.Peer+"/"+f.PeerIface, gw, r)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v := l.Spec.VM; v != nil {
		accel := string(v.Accel)
		if v.Accel == vm.TCG {
			accel = "TCG (emulated CPUs: rates are the emulator's, not the driver's)"
		}
		fmt.Fprintf(w, "guests: %s with %s NICs, %s image, %d CPUs and %d MiB each, run by QEMU under %s\n",
			strings.Join(v.Nodes, ", "), v.NIC, v.Image, v.CPUs, v.MemoryMB, accel)
		if v.AccelWhy != "" {
			fmt.Fprintf(w, "  not KVM: %s\n", v.AccelWhy)
		}
		for _, g := range l.Guests {
			fmt.Fprintf(w, "  %s: kernel %s, up in %s; console %s\n", g.Node, g.Kernel, g.Boot.Round(100*time.Millisecond), filepath.Join(g.Dir, "console.log"))
			if g.Stall != "" {
				fmt.Fprintf(w, "    reset once while booting: %s\n", g.Stall)
			}
		}
	}
	if s := l.Spec.Serve; s != nil {
		pinned := ""
		if len(s.CPUs) > 0 {
			pinned = "; pinned to CPUs " + cpuList(s.CPUs)
		}
		_, err := fmt.Fprintf(w, "agents: linerate serve in %d of %d nodes, port %d%s; secret in %s; log in %s\n",
			len(l.Agents), len(l.Nodes), s.Port, pinned, l.SecretFile(), l.dir.logPath(l.Spec.Name))
		return err
	}
	return nil
}

// Summary is one line about the lab for `lab list`: name, topology,
// status, nodes, subnet, agents and guests.
func (l *Lab) Summary() string {
	nodes := l.NodeNames()
	if len(nodes) > 4 {
		// box,peer1..peer64
		nodes = []string{nodes[0], nodes[1] + ".." + nodes[len(nodes)-1]}
	}
	topo, subnet, list := l.Spec.Topology, "-", strings.Join(nodes, ",")
	if l.Spec.Subnet.IsValid() {
		subnet = l.Spec.Subnet.String()
	}
	if topo == "" { // a partial state with nothing recovered
		topo, list = "-", "-"
	}
	agents := "-"
	if l.Spec.Serve != nil {
		agents = fmt.Sprintf("%d/%d running", l.AgentsRunning(), len(l.Nodes))
	}
	guests := "-"
	if v := l.Spec.VM; v != nil {
		running := 0
		for _, g := range l.Guests {
			if alive(g.Pid, g.Started) {
				running++
			}
		}
		guests = fmt.Sprintf("%s %s, %d/%d running", strings.Join(v.Nodes, ","), v.NIC, running, len(v.Nodes))
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", l.Spec.Name, topo, l.Status(), list, subnet, agents, guests)
}

// cpuList is a list of CPUs as serve --cpus takes it: "0", "0,2".
func cpuList(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}
