package wire

// Punch is what the accept tells a client that punches (Spec.Punch).
type Punch struct {
	// Nonce goes in every punch (hex).
	Nonce string `json:"nonce"`
	// Ports are the server's sending sockets, in order: Spec.Streams of
	// them for each of the client's ports in turn.
	Ports []uint16 `json:"ports"`
}
