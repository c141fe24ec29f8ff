package client

import "github.com/ampbundle/ampbundle/amp"

// Receipt is a report about a message this party sent: an ACK, PROC_OK,
// PROC_FAIL, ERROR or PROCESSING that arrived on its own (not as the
// synchronous reply of a request). The agent that received it has
// verified it (signature, sender keys, time) and that it is addressed to
// the agent; its body has the shape of its type. Whether it really
// concerns one of the outbound messages, and whether its sender may report
// on it (RFC 001 §16.1 ack_source rules), is for its receiver to decide:
// Outbox.Receive does. It is amp.Receipt, which the agent hands to
// Config.Receipts without importing this package.
type Receipt = amp.Receipt
