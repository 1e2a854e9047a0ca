package results

import (
	"fmt"
	"sort"
	"strings"

	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/wire"
)

// OrderSamples puts the client's samples first, then each server's, each
// in time order.
func OrderSamples(s []Sample) {
	rank := func(x Sample) int {
		if x.Side == SideClient {
			return -1
		}
		return x.Target
	}
	sort.SliceStable(s, func(i, j int) bool {
		if ri, rj := rank(s[i]), rank(s[j]); ri != rj {
			return ri < rj
		}
		return s[i].Start.Before(s[j].Start)
	})
}

// Verdict says what limited the run, where it can tell, from the threads'
// CPU use, the CPUs the ends and the hosts in the middle sampled, the loss
// and the drop counters. A figure nobody read (a plain iperf3 peer's
// socket and CPUs, an end without samples) is unknown, not zero: the
// verdict says what it could not see rather than conclude from its
// absence, and names the path only when both ends' counters were read.
func Verdict(res *Result, clientThreads []ThreadCPU) {
	defer farEndDied(res)
	sum := &res.Summary
	sp := &res.Spec
	var senders, receivers []ThreadCPU
	for _, t := range clientThreads {
		if strings.HasSuffix(t.Role, "-recv") {
			receivers = append(receivers, t)
		} else {
			senders = append(senders, t)
		}
	}
	for _, tr := range res.Targets {
		for _, t := range tr.Threads {
			if strings.HasSuffix(t.Role, "-recv") {
				receivers = append(receivers, t)
			} else {
				senders = append(senders, t)
			}
		}
	}
	busiest := func(ts []ThreadCPU) float64 {
		b := 0.0
		for _, t := range ts {
			b = max(b, t.Busy)
		}
		return b
	}
	sendBusy, recvBusy := busiest(senders), busiest(receivers)
	if len(senders) > 0 {
		sum.SenderThreadBusy = &sendBusy
	}
	if len(receivers) > 0 {
		sum.ReceiverThreadBusy = &recvBusy
	}
	asked := 0.0
	if !sp.Rate.Unlimited() && sp.Proto == wire.UDP {
		dirs := 0
		if sp.ClientSends() {
			dirs++
		}
		if sp.ServerSends() {
			dirs++
		}
		asked = sp.UDPPacketsPerSecond(res.FrameSize-sp.Payload) * float64(len(res.Targets)*dirs)
	}
	frame := res.FrameSize
	if sp.Proto == wire.TCP {
		frame = tcpFrame(res)
	}
	lim, hasLim := PathCeiling(res, frame)
	if hasLim {
		sum.PathCeiling = &lim
	}
	if down := res.LinkDownSeconds(); down > 0 && sum.SentBytes > 0 {
		// Whatever else the figures say, they say it of a run with a
		// hole in it: the link's.
		short := asked > 0 && sum.SentPPS < MetRate*asked
		if sum.LostPackets > 0 || short || sp.Proto == wire.TCP {
			sum.LimitedBy, sum.LimitedWhy = LimitLinkDown, linkDownWhy(res, asked)
			return
		}
	}
	e := seenEnds(res, clientThreads)
	if sp.Proto == wire.TCP && sp.Direction != wire.Bidir {
		tcpVerdict(res, e, sendBusy, recvBusy)
		return
	}
	j := judge{res: res, ends: e, asked: asked, senders: senders, receivers: receivers, sendBusy: sendBusy, recvBusy: recvBusy}
	for _, t := range senders {
		j.behind += t.Behind
		j.preempted += t.Preempted
	}
	if hasLim {
		j.lim = &lim
	}
	sum.LimitedBy, sum.LimitedWhy = j.verdict()
}

// judge is what the verdict of a UDP test, or of TCP both ways, weighs.
type judge struct {
	res                *Result
	ends               ends
	lim                *ceiling.PathLimit
	asked              float64 // pps asked in all, 0 for as fast as possible
	senders, receivers []ThreadCPU
	sendBusy, recvBusy float64
	behind             uint64
	preempted          int64
}

// verdict is the first of the rules of docs/bench.md ("How limited by is
// decided") that applies.
func (j *judge) verdict() (Limit, string) {
	res, sum, sp := j.res, &j.res.Summary, &j.res.Spec
	asked := j.asked
	achieved := sum.ReceivedPPS
	met := asked > 0 && sum.SentPPS >= MetRate*asked && sum.LossRatio <= Lossy
	short := asked > 0 && sum.SentPPS < MetRate*asked
	lossy := sum.LossRatio > Lossy
	dropBy, dropWhy := dropVerdict(res.Ledger)
	if dropBy == LimitPath && !j.ends.dropsBoth() {
		// "No counter saw them" is the path only when both ends'
		// counters were there to see.
		dropBy, dropWhy = "", ""
	}
	drops, dropsSeen := receiverDrops(res)
	cpuWhy, cpuFull := fullCPU(res)
	bidirWhy, bidirLink := bidirAtLink(res)
	threads := fmt.Sprintf("busiest sender %s, receiver %s", threadsText(j.sendBusy, len(j.senders) > 0), threadsText(j.recvBusy, len(j.receivers) > 0))
	noThread := "no thread saturated (" + threads + ")"
	if len(j.senders)+len(j.receivers) == 0 {
		noThread = "the test's threads not measured"
	}
	lost := units.Percent(sum.LossRatio, 2) + " lost"
	switch {
	case sum.SentPackets == 0 && sum.SentBytes == 0:
		return LimitUnknown, "nothing was sent"
	case j.ends.noReport() != "":
		return LimitUnknown, j.ends.noReport()
	case j.lim != nil && sp.Direction != wire.Bidir && achieved > OverCeiling*j.lim.FPS:
		return LimitOverCeiling, overCeilingWhy(res, *j.lim, achieved)
	case j.lim != nil && sp.Direction != wire.Bidir && !met && achieved >= AtLink*j.lim.FPS:
		return LimitLink, fmt.Sprintf("received %.0f pps, %s of the path's ceiling of %.0f pps: %s on %s %s", achieved, units.Percent(achieved/j.lim.FPS, 1), j.lim.FPS, j.lim.What, j.lim.Host, j.lim.Iface)
	case bidirLink && !met:
		return LimitLink, "both ways at once: " + bidirWhy
	case short && j.sendBusy >= BusyThread:
		return LimitSender, fmt.Sprintf("sent %.0f pps of %.0f asked with a sender thread at %s of a CPU", sum.SentPPS, asked, units.Percent(j.sendBusy, 0))
	case short && j.behind > 0:
		return LimitSender, fmt.Sprintf("sent %.0f pps of %.0f asked: the sender threads were not scheduled in time for %d packets (%d preemptions; the CPUs are busy with something else)", sum.SentPPS, asked, j.behind, j.preempted)
	case short && cpuFull:
		return LimitCPU, fmt.Sprintf("sent %.0f pps of %.0f asked with %s, while %s", sum.SentPPS, asked, noThread, cpuWhy)
	case short && len(j.senders) > 0 && unsampledNames(j.ends.sender(*sp)) == "":
		return LimitPath, fmt.Sprintf("sent %.0f pps of %.0f asked while the sender threads had CPU to spare (%s) and no CPU was full of interrupts and softirqs: sends were blocked by the path below the socket", sum.SentPPS, asked, units.Percent(j.sendBusy, 0))
	case short && len(j.senders) > 0:
		return LimitUnknown, fmt.Sprintf("sent %.0f pps of %.0f asked with the sender threads at most %s of a CPU, and %s was not sampled: a full CPU there cannot be told from sends held back below the socket", sum.SentPPS, asked, units.Percent(j.sendBusy, 0), unsampledNames(j.ends.sender(*sp)))
	case short:
		return LimitUnknown, fmt.Sprintf("sent %.0f pps of %.0f asked; the sending threads were not measured, so a busy sender cannot be told from sends held back below the socket", sum.SentPPS, asked)
	case lossy && dropBy == LimitPath && cpuFull:
		return LimitCPU, fmt.Sprintf("%s; %s, while %s", lost, dropWhy, cpuWhy)
	case lossy && dropBy != "":
		return dropBy, fmt.Sprintf("%s; %s", lost, dropWhy)
	case lossy && (j.recvBusy >= BusyThread || drops > 0):
		why := lost + "; "
		if len(j.receivers) > 0 {
			why += fmt.Sprintf("a receiver thread at %s of a CPU, ", units.Percent(j.recvBusy, 0))
		}
		return LimitReceiver, why + dropRate(drops, dropsSeen) + " in the receiver's socket buffers and backlog"
	case lossy && cpuFull:
		why := fmt.Sprintf("%s with %s, while %s", lost, noThread, cpuWhy)
		if gaps := j.ends.lossUnseen(*sp); len(gaps) > 0 {
			why += "; not seen: " + strings.Join(gaps, "; ")
		}
		return LimitCPU, why
	case lossy && len(j.ends.lossUnseen(*sp)) > 0:
		return LimitUnknown, fmt.Sprintf("%s, and where cannot be told: %s", lost, strings.Join(j.ends.lossUnseen(*sp), "; "))
	case lossy:
		return LimitPath, fmt.Sprintf("%s between the ends: both ends' socket and backlog counters were read and counted no drops, no thread was saturated (%s) and no CPU was full of interrupts and softirqs", lost, threads)
	case asked > 0:
		return LimitAskedRate, fmt.Sprintf("sent %.0f pps of %.0f asked", sum.SentPPS, asked)
	case j.sendBusy >= BusyThread:
		return LimitSender, fmt.Sprintf("a sender thread at %s of a CPU and no loss to speak of", units.Percent(j.sendBusy, 0))
	case j.recvBusy >= BusyThread:
		return LimitReceiver, fmt.Sprintf("a receiver thread at %s of a CPU", units.Percent(j.recvBusy, 0))
	case cpuFull:
		return LimitCPU, fmt.Sprintf("%s, but %s", noThread, cpuWhy)
	case sp.Proto == wire.UDP && len(j.senders) > 0 && unsampledNames(j.ends.sender(*sp)) == "":
		return LimitPath, fmt.Sprintf("no thread was saturated (%s) and no CPU was full of interrupts and softirqs: the kernel below the sockets set the pace", threads)
	case sp.Proto == wire.UDP && len(j.senders) > 0:
		return LimitUnknown, fmt.Sprintf("no thread was saturated (%s), and %s was not sampled: a full CPU there cannot be told from the path", threads, unsampledNames(j.ends.sender(*sp)))
	case len(j.senders) > 0:
		return LimitUnknown, fmt.Sprintf("no thread saturated (%s); both ways at once each end sends and receives on the same CPUs, so neither is named", threads)
	}
	return LimitUnknown, "no thread measure to judge from"
}

// dropRate is a drop rate as the verdict says it, or that nobody counted
// the drops.
func dropRate(perSecond float64, counted bool) string {
	if !counted {
		return "drops uncounted"
	}
	return fmt.Sprintf("%.0f drops/s", perSecond)
}

// overCeilingWhy says why a received rate over OverCeiling of the path's
// ceiling lim cannot be the link, and what to suspect.
func overCeilingWhy(res *Result, lim ceiling.PathLimit, achieved float64) string {
	unit := "pps"
	if res.Spec.Proto == wire.TCP {
		unit = "segments/s"
	}
	return fmt.Sprintf("received %.0f %s, %s of the path's ceiling of %.0f (%s on %s %s): more than the path can carry, so its model or the path is not what linerate thinks; %s",
		achieved, unit, units.Percent(achieved/lim.FPS, 1), lim.FPS, lim.What, lim.Host, lim.Iface, OverCeilingSuspects(res.Spec.Proto, lim))
}

// OverCeilingSuspects names what to suspect when more of proto passed
// than the path's ceiling lim lets through: TCP segments counted above
// the frame rate (GRO and TSO join segments into packets larger than a
// frame), a shaper the traffic did not pass through (an engine below the
// qdiscs, a route around it), a link speed that is not the link's.
func OverCeilingSuspects(proto wire.Proto, lim ceiling.PathLimit) string {
	var suspects []string
	if proto == wire.TCP {
		suspects = append(suspects, "GRO/TSO counting (TCP segments counted above the frame rate: the mean segment is not what the wire carried)")
	}
	switch lim.By {
	case ceiling.LimitShaper:
		suspects = append(suspects, fmt.Sprintf("a shaper the traffic did not pass through (%s: a send engine below the qdiscs, or a route around it)", lim.What))
	default:
		suspects = append(suspects, fmt.Sprintf("a wrong link speed (%s %s reports %s; the link carries more)", lim.Host, lim.Iface, lim.What))
	}
	return "suspect " + strings.Join(suspects, ", or ")
}

// receiverDrops is the mean rate of the receiving ends' socket buffer and
// backlog drops (UDP RcvbufErrors, softnet dropped) over the samples;
// counted is false when no receiving end was sampled.
func receiverDrops(res *Result) (perSecond float64, counted bool) {
	var sum float64
	n := 0
	for _, s := range res.Samples {
		recv := (s.Side == SideServer && res.Spec.ClientSends()) || (s.Side == SideClient && res.Spec.ServerSends())
		if !recv || len(s.UDP) == 0 {
			continue
		}
		n++
		sum += s.UDP["RcvbufErrors"]
		for _, sn := range s.Softnet {
			sum += sn.Dropped
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// tcpVerdict judges a one-way TCP run from the ends' CPU samples: TCP
// slows itself down to what the slowest part takes, so the end with a
// saturated CPU is the limit; otherwise retransmits point at the path,
// when both ends' CPUs were sampled.
func tcpVerdict(res *Result, e ends, sendThread, recvThread float64) {
	sum := &res.Summary
	sender, receiver := SideClient, SideServer
	if res.Spec.Direction == wire.Reverse {
		sender, receiver = receiver, sender
	}
	sCPU, sSampled := busiestCPU(res, sender)
	rCPU, rSampled := busiestCPU(res, receiver)
	cpuWhy, cpuFull := fullCPU(res)
	unsampled := unsampledNames(append(e.sender(res.Spec), e.receiver(res.Spec)...))
	lim := sum.PathCeiling
	switch {
	case sum.SentBytes == 0:
		sum.LimitedWhy = "nothing was sent"
	case e.noReport() != "":
		sum.LimitedWhy = e.noReport()
	case lim != nil && sum.ReceivedPPS > OverCeiling*lim.FPS:
		sum.LimitedBy, sum.LimitedWhy = LimitOverCeiling, overCeilingWhy(res, *lim, sum.ReceivedPPS)
	case lim != nil && sum.ReceivedPPS >= AtLink*lim.FPS:
		sum.LimitedBy = LimitLink
		sum.LimitedWhy = fmt.Sprintf("received %.0f segments/s, %s of the path's ceiling of %.0f frames/s of that size: %s on %s %s", sum.ReceivedPPS, units.Percent(sum.ReceivedPPS/lim.FPS, 1), lim.FPS, lim.What, lim.Host, lim.Iface)
	case sendThread >= BusyThread:
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fmt.Sprintf("a sending thread of the %s was at %s of a CPU", sender, units.Percent(sendThread, 0))
	case recvThread >= BusyThread:
		sum.LimitedBy = LimitReceiver
		sum.LimitedWhy = fmt.Sprintf("a receiving thread of the %s was at %s of a CPU", receiver, units.Percent(recvThread, 0))
	case sCPU.full():
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fullEndWhy(sCPU, "sending", sender)
	case rCPU.full():
		sum.LimitedBy = LimitReceiver
		sum.LimitedWhy = fullEndWhy(rCPU, "receiving", receiver)
	case cpuFull:
		sum.LimitedBy = LimitCPU
		sum.LimitedWhy = "no end's CPU was saturated, but " + cpuWhy
	case sum.Retransmits > 0 && unsampled == "":
		sum.LimitedBy = LimitPath
		sum.LimitedWhy = fmt.Sprintf("%d segments retransmitted while neither end had a saturated CPU", sum.Retransmits)
	case sum.Retransmits > 0:
		sum.LimitedWhy = fmt.Sprintf("%d segments retransmitted; %s was not sampled, so a saturated CPU there cannot be told from the path", sum.Retransmits, unsampled)
	case len(res.Samples) == 0:
		sum.LimitedWhy = "no samples"
	default:
		sum.LimitedWhy = fmt.Sprintf("no CPU saturated (busiest %s sending, %s receiving) and no retransmits", cpuText(sCPU, sSampled), cpuText(rCPU, rSampled))
	}
}

// fullEndWhy says that CPU c of the end that was sending or receiving
// (role) was full, and how much of it was softirq.
func fullEndWhy(c cpuLoad, role string, end Side) string {
	why := fmt.Sprintf("cpu%d of the %s end (%s) was %s busy, %s of it softirq", c.id, role, end, units.Percent(c.busy/100, 0), units.Percent(c.softirq/c.busy, 0))
	if c.kernelShare() >= KernelShare {
		why += "; " + diagnoseHint
	}
	return why
}

// cpuText is a CPU's busy share, or that the end was not sampled.
func cpuText(c cpuLoad, sampled bool) string {
	if !sampled {
		return "not sampled"
	}
	return units.Percent(c.busy/100, 0)
}

// busiestCPU is the CPU of one side with the highest mean busy percent over
// its samples (of any of its machines); sampled is false when the side had
// no CPU samples.
func busiestCPU(res *Result, side Side) (busiest cpuLoad, sampled bool) {
	busiest.id = -1
	for _, m := range machineLoads(res) {
		if m.side != side {
			continue
		}
		for _, c := range m.cpus {
			sampled = true
			if c.busy > busiest.busy || busiest.id < 0 {
				busiest = c
			}
		}
	}
	return busiest, sampled
}
