// Package admission holds what decides, per peer, how a received message
// is let in to be processed, shared by the AMP bindings (transport and
// its amphttp and ampstcp packages) and the agent runtime, so that the
// agent needs neither a binding nor the transport package:
//
//   - the peer a message counts against (WithPeer, PeerOf; a binding
//     names it with transport.Peer: an IP address, an IPv6 /64), and the
//     network its share of the slots is counted by (Network: an IPv6
//     /64's /48);
//   - the agent's processing slots, handed out fairly by peer (Fair),
//     with the names of its refusals (ErrPeerBusy, ErrSlotWaitEnded);
//   - how fast declared bytes must arrive (MinDataRate, FrameGrace,
//     DataDeadline);
//   - the request's log line: the peer's address on it, and whether the
//     outcome was logged already (WithRemote, Log, Logged), so that a
//     request is logged once, by whoever refused or answered it.
//
// It imports only amp.
package admission
