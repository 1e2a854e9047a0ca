package wire

// Size is what one message of a type may carry (docs/bench.md, "Message
// sizes"): the JSON fields besides "type", who sends it, and how large it
// may be. A message is refused before it is decoded when its line has more
// bytes, or more JSON objects and arrays ("values": each becomes at least a
// struct, slice or map when decoded), than its type allows; then it is
// decoded into its fields only, so a field its type does not carry costs
// nothing however large.
//
// Types whose payload grows with the test add to the base per second the
// reader has waited since it asked (a test, a flow, samples: one sample and
// one interval a second at most), and per flow of the test (a count per
// stream).
type Size struct {
	From   Role // the end that sends it; "" either
	Fields []string
	Bytes  int // of the whole line
	Values int // JSON objects and arrays in it
	// PerSecond and PerFlow add to Bytes and Values.
	PerSecond, PerFlow Growth
}

// Growth is what a message may add per second or per flow.
type Growth struct{ Bytes, Values int }

// What a flow's count adds with a mix of sizes (Spec.Sizes): an array of
// a count per part, each `{"payload":65507,"packets":18446744073709551615},`.
const (
	mixBytes  = MaxSizeParts * 48
	mixValues = 1 + MaxSizeParts
)

// Caps over every type however long the test: no message is longer or
// holds more values, and none nests deeper.
const (
	MaxMessage = 64 << 20
	MaxValues  = 1 << 20
	MaxDepth   = 32
)

// Sizes of every message type.
var Sizes = map[string]Size{
	MsgHello:        {From: RoleClient, Fields: []string{"version", "linerate", "nonce"}, Bytes: 4 << 10, Values: 1},
	MsgChallenge:    {From: RoleServer, Fields: []string{"version", "linerate", "nonce", "proof", "open"}, Bytes: 4 << 10, Values: 1},
	MsgAuth:         {From: RoleClient, Fields: []string{"proof"}, Bytes: 4 << 10, Values: 1},
	MsgWelcome:      {From: RoleServer, Fields: []string{"version", "linerate", "limits", "server_id", "features"}, Bytes: 4 << 10, Values: 8},
	MsgTest:         {From: RoleClient, Fields: []string{"spec"}, Bytes: 64 << 10, Values: 64},
	MsgAccept:       {From: RoleServer, Fields: []string{"accept"}, Bytes: 64 << 10, Values: 64},
	MsgStart:        {From: RoleClient, Bytes: 1 << 10, Values: 1},
	MsgRunning:      {From: RoleServer, Bytes: 1 << 10, Values: 1},
	MsgInterval:     {From: RoleServer, Fields: []string{"interval"}, Bytes: 4 << 10, Values: 4},
	MsgStop:         {From: RoleClient, Fields: []string{"sent"}, Bytes: 4 << 10, Values: 4, PerFlow: Growth{256 + mixBytes, 1 + mixValues}},
	MsgResult:       {From: RoleServer, Fields: []string{"result"}, Bytes: 256 << 10, Values: 1024, PerSecond: Growth{1 << 20, 4096}, PerFlow: Growth{1<<10 + mixBytes, 4 + mixValues}},
	MsgBye:          {From: RoleClient, Bytes: 1 << 10, Values: 1},
	MsgFlow:         {From: RoleClient, Fields: []string{"flow"}, Bytes: 64 << 10, Values: 64},
	MsgFlowInterval: {From: RoleServer, Fields: []string{"flow_interval"}, Bytes: 256 << 10, Values: 4096, PerFlow: Growth{256, 2}}, // a CPU each
	MsgFlowResult:   {From: RoleServer, Fields: []string{"flow_result"}, Bytes: 256 << 10, Values: 1024, PerSecond: Growth{1 << 20, 4096}, PerFlow: Growth{2<<10 + mixBytes, 8 + mixValues}},
	MsgFlowProgress: {From: RoleServer, Fields: []string{"progress"}, Bytes: 4 << 10, Values: 1},
	MsgFlowReady:    {From: RoleServer, Bytes: 1 << 10, Values: 1},
	MsgSample:       {From: RoleClient, Bytes: 1 << 10, Values: 1},
	MsgSamples:      {From: RoleServer, Fields: []string{"samples", "error"}, Bytes: 64 << 10, Values: 16, PerSecond: Growth{1 << 20, 4096}},
	MsgListen:       {From: RoleClient, Fields: []string{"listen"}, Bytes: 16 << 10, Values: 4},
	MsgListening:    {From: RoleServer, Fields: []string{"listening"}, Bytes: 16 << 10, Values: 2},
	MsgError:        {Fields: []string{"code", "error"}, Bytes: 16 << 10, Values: 1},
}

// Limit is how many bytes and values a message of size z may have after
// seconds of waiting in a test of flows flows, within the caps.
func (z Size) Limit(seconds, flows int) (bytes, values int) {
	// In 64 bits, so that a long test's growth neither overflows a 32-bit
	// int (linerate runs on ARMv7) nor wraps below the caps.
	grow := func(base, perSecond, perFlow, limit int) int {
		n := int64(base) + int64(max(seconds, 0))*int64(perSecond) + int64(max(flows, 0))*int64(perFlow)
		return int(min(n, int64(limit)))
	}
	return grow(z.Bytes, z.PerSecond.Bytes, z.PerFlow.Bytes, MaxMessage),
		grow(z.Values, z.PerSecond.Values, z.PerFlow.Values, MaxValues)
}
