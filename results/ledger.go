package results

import (
	"fmt"
	"math"
	"net/netip"
	"slices"

	"linerate/box"
	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/ledger"
	"linerate/wire"
)

// BuildLedger builds the result's drop ledger from its ends' drop
// counters (UDP only); several says the test had several targets (its
// servers are named by number), notes to note the ends whose counters
// could not be read.
func (res *Result) BuildLedger(several, notes bool) {
	if res.Spec.Proto != wire.UDP || len(res.Drops) == 0 {
		return
	}
	test := ledger.Test{Sent: res.Summary.SentPackets}
	test.Received = test.Sent - min(res.Summary.LostPackets, test.Sent)
	test.LinkDown = res.SentWhileDown()
	test.LinkEvidence = res.describeLinkEvents()
	var hosts []ledger.Host
	for _, d := range res.Drops {
		if d.Error != "" && notes {
			res.Notes = append(res.Notes, fmt.Sprintf("%s drop counters: %s", endName(d.Side, d.Target, several), d.Error))
		}
		if d.Delta == nil {
			continue
		}
		side := endSide(d.Side, res.Spec.Direction)
		if d.Side == SideDUT {
			side = ledger.Path
		} else if (d.Side == SideClient) == res.Spec.ClientSends() || res.Spec.Direction == wire.Bidir {
			test.Refused += d.Refused
		}
		h := ledger.Host{Name: endName(d.Side, d.Target, several), Side: side, Ifaces: d.Ifaces, Delta: *d.Delta}
		if j := sameNetns(hosts, h); j >= 0 {
			// Ends in one namespace are one host, their counters counted
			// once: both ends (loopback) make one that sends and
			// receives; several servers one server.
			if hosts[j].Side != h.Side {
				hosts[j].Side = ledger.Local
			}
			for _, n := range h.Ifaces {
				if !slices.Contains(hosts[j].Ifaces, n) {
					hosts[j].Ifaces = append(hosts[j].Ifaces, n)
				}
			}
			continue
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return
	}
	l := ledger.Build(test, hosts)
	res.Ledger = &l
}

// AddPathDrops adds the drop counters of a device the test crossed (side
// "dut", Name its host) and builds the ledger again with it: what its
// counters place (a NAT's conntrack, a firewall, a full backlog) is then
// the path's.
func (res *Result) AddPathDrops(d EndDrops) {
	d.Side, d.Target = SideDUT, -1
	res.Drops = append(res.Drops, d)
	res.BuildLedger(len(res.Targets) > 1, false)
	if d.Error != "" {
		res.Notes = append(res.Notes, "the device in the middle's drop counters: "+d.Error)
	}
}

// endName is how an end is named in the ledger and its link events:
// "client", "server", or "server N" (from 1) when there are several
// targets; "dut" for the device in the middle.
func endName(side Side, target int, several bool) string {
	if side != SideServer || target < 0 || !several {
		return string(side)
	}
	return fmt.Sprintf("server %d", target+1)
}

// endSide is the part an end played in a test of direction dir.
func endSide(side Side, dir wire.Direction) ledger.Side {
	switch {
	case dir == wire.Bidir:
		return ledger.Local
	case (side == SideClient) == (dir == wire.Forward):
		return ledger.Sender
	}
	return ledger.Receiver
}

// sameNetns is the index of the host in hosts with the same network
// namespace as h (same machine and namespace inode), or -1.
func sameNetns(hosts []ledger.Host, h ledger.Host) int {
	for i, o := range hosts {
		if h.Delta.Netns != 0 && o.Delta.Netns == h.Delta.Netns && o.Delta.Machine == h.Delta.Machine {
			return i
		}
	}
	return -1
}

// PathCeiling is the slowest limit on the path of the test's first
// direction for frames of frame bytes (a UDP test's mix of sizes, when it
// sends one: frame is then unused): the sending end's link speeds and
// egress shapers, and the receiving end's link speeds (its shapers limit
// the other direction). The client's shapers are left out when its
// engine sends below them (BypassesQdisc).
func PathCeiling(res *Result, frame int) (ceiling.PathLimit, bool) {
	return pathCeiling(res, frame, sendingSide(res))
}

// sendingSide is the side that sends res's first direction.
func sendingSide(res *Result) Side {
	if !res.Spec.ClientSends() {
		return SideServer
	}
	return SideClient
}

// queuesHold reports whether the egress qdiscs of an end on side hold
// what senderSide sends: the sending end's do, unless its engine sends
// below them (BypassesQdisc); the receiving end's shape the other
// direction.
func queuesHold(res *Result, side, senderSide Side) bool {
	return side == senderSide && !(side == SideClient && BypassesQdisc(res.Engine))
}

// pathCeiling is PathCeiling of the direction senderSide sends.
func pathCeiling(res *Result, frame int, senderSide Side) (ceiling.PathLimit, bool) {
	mix := ceiling.SingleFrame(frame)
	if res.Spec.Proto == wire.UDP && res.Spec.Mixed() {
		mix = res.Mix()
	}
	if frame == 0 || len(res.Drops) == 0 {
		return ceiling.PathLimit{}, false
	}
	type ifaceKey struct {
		netns uint64
		side  Side
		iface string
	}
	var path, client []box.PathIface
	servers := map[int][]box.PathIface{}
	seen := map[ifaceKey]bool{}
	for _, d := range res.Drops {
		if d.Side == SideDUT {
			continue
		}
		for _, p := range d.Path {
			// An engine below the qdiscs sends past the client's
			// shapers: the client's links limit it, its qdiscs do not.
			if !queuesHold(res, d.Side, senderSide) {
				p.Qdiscs, p.Classes = nil, nil
			}
			path = append(path, p)
			if d.Side == SideClient {
				client = append(client, p)
				continue
			}
			// Targets served from one namespace share its interfaces.
			k := ifaceKey{side: d.Side, iface: p.Iface}
			if d.Delta != nil && d.Delta.Netns != 0 {
				k.netns = d.Delta.Netns
			} else {
				k.side = Side(fmt.Sprint(d.Target))
			}
			if !seen[k] {
				seen[k] = true
				servers[d.Target] = append(servers[d.Target], p)
			}
		}
	}
	if len(res.Targets) <= 1 {
		return ceiling.PathCeiling(path, mix)
	}
	// Several targets: each has its own path, and the client's interfaces
	// carry all of them. The ceiling is the lower of what the targets'
	// paths add up to and what the client's interfaces add up to.
	serverSum, bound := 0.0, ceiling.PathLimit{}
	for i := range res.Targets {
		lim, ok := ceiling.PathCeiling(servers[i], mix)
		if !ok {
			// A target with nothing on its side to hold it: its share is
			// what the client's interfaces leave.
			serverSum = math.Inf(1)
			break
		}
		serverSum += lim.FPS
		bound = lim
	}
	clientSum, clientBound := 0.0, ceiling.PathLimit{}
	for _, p := range client {
		if lim, ok := ceiling.PathCeiling([]box.PathIface{p}, mix); ok {
			clientSum += lim.FPS
			clientBound = lim
		} else {
			clientSum = math.Inf(1)
			break
		}
	}
	if len(client) == 0 {
		clientSum = math.Inf(1)
	}
	total := min(serverSum, clientSum)
	if math.IsInf(total, 1) || total <= 0 {
		return ceiling.PathLimit{}, false
	}
	lim := bound
	what := fmt.Sprintf("the %d targets' paths added up", len(res.Targets))
	if clientSum < serverSum {
		lim = clientBound
		what = fmt.Sprintf("the client's %d interfaces added up", len(client))
		if len(client) == 1 {
			what = clientBound.What + " shared by the " + fmt.Sprint(len(res.Targets)) + " targets"
		}
	}
	lim.What, lim.FPS = what, total
	lim.L2Bps = total * float64(frame) * 8
	lim.LineBps = total * float64(frame+ceiling.WireExtraBytes) * 8
	return lim, true
}

// tcpFrame is the mean Ethernet frame (FCS included) of a TCP test's data
// segments: the bytes received per segment, plus the headers of a segment
// with timestamps (Ethernet 14, IPv4 20 or IPv6 40, TCP 32, FCS 4). 0 when
// nothing was received.
func tcpFrame(res *Result) int { return tcpFrameOf(res, res.Summary.Totals) }

// tcpFrameOf is tcpFrame of the segments sum counts (one direction's).
func tcpFrameOf(res *Result, sum Totals) int {
	if sum.ReceivedPackets == 0 || len(res.Targets) == 0 {
		return 0
	}
	hdr := 14 + 20 + 32 + 4
	if a, err := netip.ParseAddrPort(res.Targets[0].Address); err == nil && !a.Addr().Is4() {
		hdr += 20
	}
	return int(math.Round(float64(sum.ReceivedBytes)/float64(sum.ReceivedPackets))) + hdr
}

// dropVerdict says which part of the path lost the packets, from the
// ledger's largest entry: "sender", "receiver", "dut" (a device in the
// middle) or "path" (no counter placed them), and the evidence.
func dropVerdict(l *ledger.Ledger) (by Limit, why string) {
	if l == nil || l.Lost == 0 || len(l.Entries) == 0 {
		return "", ""
	}
	top := l.Entries[0]
	for _, e := range l.Entries[1:] {
		if e.Packets > top.Packets {
			top = e
		}
	}
	share := units.Percent(float64(top.Packets)/float64(l.Lost), 0)
	if top.Place == ledger.LinkDown {
		return LimitLinkDown, fmt.Sprintf("%s of the %d lost packets were sent while a link of the path was down", share, l.Lost)
	}
	if top.Place == ledger.Unaccounted {
		return LimitPath, fmt.Sprintf("%s of the %d lost packets died where no counter of either end saw them: between the ends", share, l.Lost)
	}
	switch top.Side {
	case ledger.Sender:
		by = LimitSender
		if top.Place == ledger.NICRxRing {
			// A receive ring counted on the sending side is the next
			// hop's (a tap whose guest had no room): the receiver's.
			by = LimitReceiver
			why = fmt.Sprintf("%s of the %d lost packets found no room in the receiving NIC's ring, counted at the %s's end of the link", share, l.Lost, top.Host)
		}
	case ledger.Receiver:
		by = LimitReceiver
	case ledger.Path:
		by = LimitDUT
	default:
		// One host sent and received: where on it says which part.
		by = LimitReceiver
		if top.Place == ledger.SenderSocket || top.Place == ledger.SenderQdisc || top.Place == ledger.NICTx {
			by = LimitSender
		}
	}
	if why == "" {
		why = fmt.Sprintf("%s of the %d lost packets died at the %s's %s", share, l.Lost, top.Host, top.Place)
	}
	if len(top.Evidence) > 0 {
		why += " (" + top.Evidence[0] + ")"
	}
	return by, why
}
