package amp

// DecodeOwn decodes a plaintext message that this process signed itself
// and has held in memory since (an agent's own reply, just built): the
// shape check and the required fields of validation (Receiver.Receive
// steps 1 to 4, under l), and nothing else. The timestamp, the sender's
// DID document and the signature are NOT checked, so bytes that came
// from a peer, a file or a store shared with another process (an
// idempotency ledger) must go through Receiver.Receive instead. An
// encrypted message is refused (1001 encrypted_body): its body cannot be
// read without decryption.
func (l Limits) DecodeOwn(data []byte) (*Message, error) {
	l = l.withDefaults()
	raw, err := decodeEnvelope(data, l)
	if err != nil {
		return nil, err
	}
	m, err := requiredFields(&raw)
	if err != nil {
		return nil, err
	}
	if m.Enc != nil {
		return nil, Named(CodeInvalidMessage, "encrypted_body", "an encrypted message is read through Receive")
	}
	m.Body = raw.canonBody
	return m, nil
}
