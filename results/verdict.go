package results

import (
	"fmt"
	"sort"
	"strings"

	"linerate/box"
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

// Cost fills the CPU cost per packet and per gigabit of each end. The
// client's packets are those it sent and received; a server's those of
// the targets it serves. Targets on the same machine (same boot id, or
// without one the same server process) share its CPU, which is counted
// once; a server on the client's machine shares the client's.
func Cost(res *Result, client []box.Rates, machine string) {
	sum := &res.Summary
	if secs, ok := cpuSeconds(client); ok {
		pk := float64(sum.SentPackets + sum.ReceivedPackets)
		bits := sum.sentBits + sum.recvBits
		sum.CPUSeconds.Client = ptr(secs)
		if pk > 0 {
			sum.CPUSecondsPerMpkt.Client = ptr(secs / pk * 1e6)
		}
		if bits > 0 {
			sum.CPUSecondsPerGbit.Client = ptr(secs / bits * 1e9)
		}
	}
	// Server CPU: once per server id.
	seen := map[string]bool{}
	var secs, pk, bits float64
	sampled := false
	for i, t := range res.Targets {
		var rates []box.Rates
		for _, s := range res.Samples {
			if s.Side == SideServer && s.Target == i {
				rates = append(rates, s.Rates)
			}
		}
		id := t.Machine
		if id == "" {
			id = t.ServerID
		}
		if id == "" {
			id = fmt.Sprint("target-", i)
		}
		if !seen[id] {
			if s, ok := cpuSeconds(rates); ok {
				secs += s
				sampled = true
				seen[id] = true
			}
		}
		pk += float64(t.SentPackets + t.ReceivedPackets)
		bits += t.sentBits + t.recvBits
	}
	if sampled && machine != "" && seen[machine] {
		res.Notes = append(res.Notes, "the client and a server run on one machine: the CPU figures of each end are that machine's, counted once per end")
	}
	if sampled {
		sum.CPUSeconds.Server = ptr(secs)
		if pk > 0 {
			sum.CPUSecondsPerMpkt.Server = ptr(secs / pk * 1e6)
		}
		if bits > 0 {
			sum.CPUSecondsPerGbit.Server = ptr(secs / bits * 1e9)
		}
	}
}

func ptr(f float64) *float64 { return &f }

// Verdict says what limited the run, where it can tell, from the threads'
// CPU use, the loss and the receiving end's drop counters.
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
	var behind uint64
	var preempted int64
	for _, t := range senders {
		behind += t.Behind
		preempted += t.Preempted
	}
	drops := receiverDrops(res)
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
	if sp.Proto == wire.TCP && sp.Direction != wire.Bidir {
		tcpVerdict(res, sendBusy, recvBusy)
		return
	}
	achieved := sum.ReceivedPPS
	met := asked > 0 && sum.SentPPS >= MetRate*asked && sum.LossRatio <= Lossy
	dropBy, dropWhy := dropVerdict(res.Ledger)
	bidirWhy, bidirLink := bidirAtLink(res)
	switch {
	case sum.SentPackets == 0 && sum.SentBytes == 0:
		sum.LimitedBy, sum.LimitedWhy = LimitUnknown, "nothing was sent"
	case hasLim && sp.Direction != wire.Bidir && achieved > OverCeiling*lim.FPS:
		sum.LimitedBy, sum.LimitedWhy = LimitOverCeiling, overCeilingWhy(res, lim, achieved)
	case hasLim && sp.Direction != wire.Bidir && !met && achieved >= AtLink*lim.FPS:
		sum.LimitedBy = LimitLink
		sum.LimitedWhy = fmt.Sprintf("received %.0f pps, %s of the path's ceiling of %.0f pps: %s on %s %s", achieved, units.Percent(achieved/lim.FPS, 1), lim.FPS, lim.What, lim.Host, lim.Iface)
	case bidirLink && !met:
		sum.LimitedBy, sum.LimitedWhy = LimitLink, "both ways at once: "+bidirWhy
	case asked > 0 && sum.SentPPS < MetRate*asked && sendBusy >= BusyThread:
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fmt.Sprintf("sent %.0f pps of %.0f asked with a sender thread at %s of a CPU", sum.SentPPS, asked, units.Percent(sendBusy, 0))
	case asked > 0 && sum.SentPPS < MetRate*asked && behind > 0:
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fmt.Sprintf("sent %.0f pps of %.0f asked: the sender threads were not scheduled in time for %d packets (%d preemptions; the CPUs are busy with something else)", sum.SentPPS, asked, behind, preempted)
	case asked > 0 && sum.SentPPS < MetRate*asked:
		sum.LimitedBy = LimitPath
		sum.LimitedWhy = fmt.Sprintf("sent %.0f pps of %.0f asked while the sender threads had CPU to spare (%s): sends were blocked by the path below the socket", sum.SentPPS, asked, units.Percent(sendBusy, 0))
	case sum.LossRatio > Lossy && dropBy != "":
		sum.LimitedBy = dropBy
		sum.LimitedWhy = fmt.Sprintf("%s lost; %s", units.Percent(sum.LossRatio, 2), dropWhy)
	case sum.LossRatio > Lossy && (recvBusy >= BusyThread || drops > 0):
		sum.LimitedBy = LimitReceiver
		sum.LimitedWhy = fmt.Sprintf("%s lost; a receiver thread at %s of a CPU, %.0f drops/s in the receiver's socket buffers and backlog", units.Percent(sum.LossRatio, 2), units.Percent(recvBusy, 0), drops)
	case sum.LossRatio > Lossy:
		sum.LimitedBy = LimitPath
		sum.LimitedWhy = fmt.Sprintf("%s lost between the ends while neither end's threads were saturated", units.Percent(sum.LossRatio, 2))
	case asked > 0:
		sum.LimitedBy = LimitAskedRate
		sum.LimitedWhy = fmt.Sprintf("sent %.0f pps of %.0f asked", sum.SentPPS, asked)
	case sendBusy >= BusyThread:
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fmt.Sprintf("a sender thread at %s of a CPU and no loss to speak of", units.Percent(sendBusy, 0))
	case recvBusy >= BusyThread:
		sum.LimitedBy = LimitReceiver
		sum.LimitedWhy = fmt.Sprintf("a receiver thread at %s of a CPU", units.Percent(recvBusy, 0))
	case sp.Proto == wire.UDP && len(senders) > 0:
		sum.LimitedBy = LimitPath
		sum.LimitedWhy = fmt.Sprintf("no thread was saturated (busiest sender %s, receiver %s): the kernel below the sockets set the pace", units.Percent(sendBusy, 0), units.Percent(recvBusy, 0))
	case len(senders) > 0:
		sum.LimitedWhy = fmt.Sprintf("no thread saturated (busiest sender %s, receiver %s); both ways at once each end sends and receives on the same CPUs, so neither is named", units.Percent(sendBusy, 0), units.Percent(recvBusy, 0))
	default:
		sum.LimitedWhy = "no thread measure to judge from"
	}
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
// backlog drops (UDP RcvbufErrors, softnet dropped) over the samples.
func receiverDrops(res *Result) float64 {
	var sum float64
	n := 0
	for _, s := range res.Samples {
		recv := (s.Side == SideServer && res.Spec.ClientSends()) || (s.Side == SideClient && res.Spec.ServerSends())
		if !recv {
			continue
		}
		n++
		sum += s.UDP["RcvbufErrors"]
		for _, sn := range s.Softnet {
			sum += sn.Dropped
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// tcpVerdict judges a one-way TCP run from the ends' CPU samples: TCP
// slows itself down to what the slowest part takes, so the end with a
// saturated CPU is the limit; otherwise retransmits point at the path.
func tcpVerdict(res *Result, sendThread, recvThread float64) {
	sum := &res.Summary
	sender, receiver := SideClient, SideServer
	if res.Spec.Direction == wire.Reverse {
		sender, receiver = receiver, sender
	}
	sBusy, sCPU := busiestCPU(res.Samples, sender)
	rBusy, rCPU := busiestCPU(res.Samples, receiver)
	lim := sum.PathCeiling
	switch {
	case sum.SentBytes == 0:
		sum.LimitedWhy = "nothing was sent"
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
	case sBusy >= BusyThread*100:
		sum.LimitedBy = LimitSender
		sum.LimitedWhy = fmt.Sprintf("CPU %d of the sending end (%s) was %s busy", sCPU, sender, units.Percent(sBusy/100, 0))
	case rBusy >= BusyThread*100:
		sum.LimitedBy = LimitReceiver
		sum.LimitedWhy = fmt.Sprintf("CPU %d of the receiving end (%s) was %s busy", rCPU, receiver, units.Percent(rBusy/100, 0))
	case sum.Retransmits > 0:
		sum.LimitedBy = LimitPath
		sum.LimitedWhy = fmt.Sprintf("%d segments retransmitted while neither end had a saturated CPU", sum.Retransmits)
	case len(res.Samples) == 0:
		sum.LimitedWhy = "no samples"
	default:
		sum.LimitedWhy = fmt.Sprintf("no CPU saturated (busiest %s sending, %s receiving) and no retransmits", units.Percent(sBusy/100, 0), units.Percent(rBusy/100, 0))
	}
}

// busiestCPU is the CPU of one side with the highest mean busy percent over
// its samples.
func busiestCPU(samples []Sample, side Side) (busy float64, cpu int) {
	total := map[int]float64{}
	n := 0
	for _, s := range samples {
		if s.Side != side {
			continue
		}
		n++
		for _, c := range s.CPU {
			total[c.ID] += c.Busy
		}
	}
	cpu = -1
	for id, t := range total {
		if m := t / float64(n); m > busy || (m == busy && id < cpu) {
			busy, cpu = m, id
		}
	}
	return busy, cpu
}
