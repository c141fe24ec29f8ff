// Package ampstcp is the AMPS/TCP binding of AMP: the canonical
// high-throughput transport of the public RFC 002 draft ("Transport
// Bindings"), as docs/TRANSPORT.md specifies it for this project.
//
// A connection carries frames: a uint32 big-endian length that counts the
// frame type and the payload (at least 1), the frame type (one byte), the
// payload. The client sends HANDSHAKE {version, max_msg_size} first; the
// server answers HANDSHAKE {version, accepted, max_msg_size} before any
// AMP_MESSAGE. Then each AMP_MESSAGE frame carries exactly one raw CBOR AMP
// message, many in flight at once in both directions; a reply is matched to
// its request by its reply_to. PING is echoed as PONG; GOAWAY tells the
// peer to send no new messages on the connection (those already sent are
// still answered); ERROR refuses one message (by its id) or the connection.
//
// Server serves any Handler (an *agent.Agent is one) with the same bounds
// as the HTTP binding: frame and message size, connections, messages and
// message bytes in flight per connection and in all (a frame's declared
// size is charged before its payload is read; beyond a cap the connection
// is not read), handshake, frame, idle and write timeouts. Transport is
// the client side; it satisfies client.Transport.
// amps:// is TLS; plain amp:// is refused to anything but a loopback
// address unless ClientOptions.AllowPlainRemote says otherwise.
//
// The binding authenticates nothing: every AMP message carries its own
// signature, which the agent verifies.
package ampstcp
