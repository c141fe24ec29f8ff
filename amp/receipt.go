package amp

// Receipt is a report about a message its receiver's party sent: an ACK,
// PROC_OK, PROC_FAIL, ERROR or PROCESSING that arrived on its own (not as
// the synchronous reply of a request). The agent that received it has
// verified it (signature, sender keys, time) and that it is addressed to
// the agent; its body has the shape of its type. Whether it really
// concerns one of the outbound messages, and whether its sender may report
// on it (RFC 001 §16.1 ack_source rules), is for its receiver to decide
// (client.Outbox.Receive does). It lives here so that the agent, which
// hands it on, and the client, which takes it, share it without importing
// each other.
type Receipt struct {
	// Message is the verified report.
	Message *Message
	// Ack is the decoded ACK body (TypeAck only).
	Ack *AckBody
	// Error is the decoded ERROR body (TypeError only).
	Error *ErrorBody
}
