package results

import (
	"slices"

	"linerate/ceiling"
)

// SizeCount is the datagrams of one payload size a UDP sender sent or a
// receiver received in the measured window, when the test sends a mix of
// sizes (wire.Spec.Sizes).
type SizeCount struct {
	Payload int    `json:"payload"`
	Packets uint64 `json:"packets"`
}

// SizeTotals is one size of a mix in one direction: what the senders sent
// and the receivers received of it (duplicates included), and its share
// of each end's datagrams.
type SizeTotals struct {
	// Frame is the Ethernet frame size, FCS included.
	Frame           int     `json:"frame"`
	Payload         int     `json:"payload"`
	SentPackets     uint64  `json:"sent_packets"`
	ReceivedPackets uint64  `json:"received_packets"`
	LostPackets     uint64  `json:"lost_packets"`
	SentShare       float64 `json:"sent_share"`
	ReceivedShare   float64 `json:"received_share"`
}

// AddSize adds n datagrams of payload bytes to counts.
func AddSize(counts []SizeCount, payload int, n uint64) []SizeCount {
	for i := range counts {
		if counts[i].Payload == payload {
			counts[i].Packets += n
			return counts
		}
	}
	return append(counts, SizeCount{Payload: payload, Packets: n})
}

// CountSize adds n datagrams of payload bytes to c's per-size counts.
func (c *Count) CountSize(payload int, n uint64) { c.Sizes = AddSize(c.Sizes, payload, n) }

// combineSizes matches a sender's and a receiver's per-size counts into
// t.Sizes, in the order of the payloads.
func (t *Totals) combineSizes(sent, recv []SizeCount, overhead int) {
	for _, s := range sent {
		t.sizeOf(s.Payload, overhead).SentPackets += s.Packets
	}
	for _, r := range recv {
		t.sizeOf(r.Payload, overhead).ReceivedPackets += r.Packets
	}
}

// sizeOf is t's entry for payload, made when missing.
func (t *Totals) sizeOf(payload, overhead int) *SizeTotals {
	i, ok := slices.BinarySearchFunc(t.Sizes, payload, func(s SizeTotals, p int) int { return s.Payload - p })
	if !ok {
		t.Sizes = slices.Insert(t.Sizes, i, SizeTotals{Frame: payload + overhead, Payload: payload})
	}
	return &t.Sizes[i]
}

// addSizes adds o's sizes to t's.
func (t *Totals) addSizes(o []SizeTotals) {
	for _, s := range o {
		d := t.sizeOf(s.Payload, s.Frame-s.Payload)
		d.SentPackets += s.SentPackets
		d.ReceivedPackets += s.ReceivedPackets
	}
}

// sizeShares fills in each size's loss and shares.
func (t *Totals) sizeShares() {
	var sent, recv uint64
	for _, s := range t.Sizes {
		sent += s.SentPackets
		recv += s.ReceivedPackets
	}
	for i := range t.Sizes {
		s := &t.Sizes[i]
		s.LostPackets = s.SentPackets - min(s.ReceivedPackets, s.SentPackets)
		if sent > 0 {
			s.SentShare = float64(s.SentPackets) / float64(sent)
		}
		if recv > 0 {
			s.ReceivedShare = float64(s.ReceivedPackets) / float64(recv)
		}
	}
}

// Mix is the test's frames as a ceiling.Mix: its mix of sizes
// (Spec.Sizes), or FrameSize alone; the zero Mix without either.
func (r *Result) Mix() ceiling.Mix {
	if len(r.Spec.Sizes) == 0 {
		if r.FrameSize == 0 {
			return ceiling.Mix{}
		}
		return ceiling.SingleFrame(r.FrameSize)
	}
	overhead := r.FrameSize - r.Spec.Payload
	var parts []ceiling.MixPart
	for _, p := range r.Spec.Sizes {
		parts = append(parts, ceiling.MixPart{Bytes: p.Payload + overhead, Weight: p.Weight})
	}
	return ceiling.MixOf(parts)
}
