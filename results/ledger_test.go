package results

import (
	"strings"
	"testing"

	"linerate/ledger"
)

// TestDropVerdictNextHopRing: drops in a receive ring counted on the
// sending side (a tap whose guest had no room, lab up --vm) are the
// receiver's limit, not the sender's.
func TestDropVerdictNextHopRing(t *testing.T) {
	l := &ledger.Ledger{Sent: 795375, Received: 56725, Lost: 738650, Entries: []ledger.Entry{
		{Host: "client", Side: ledger.Sender, Place: ledger.NICRxRing, Packets: 738650,
			Evidence: []string{"b (tap): tx_dropped 738650: its reader (the NIC of a guest behind it) had no room"}},
	}}
	by, why := dropVerdict(l)
	if by != LimitReceiver {
		t.Errorf("limited by %q (%s), want receiver", by, why)
	}
	for _, want := range []string{"100 % of the 738650 lost packets", "receiving NIC's ring", "(b (tap): tx_dropped"} {
		if !strings.Contains(why, want) {
			t.Errorf("why %q: no %q", why, want)
		}
	}
	// The sender's own transmit path stays the sender's.
	l.Entries[0].Place = ledger.NICTx
	if by, why := dropVerdict(l); by != LimitSender || !strings.Contains(why, "died at the client's nic-tx") {
		t.Errorf("nic-tx: %q (%s), want sender", by, why)
	}
}
