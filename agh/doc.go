// Package agh projects the capabilities of a store onto the AGH capability
// discovery wire contract: three views of one catalog.
//
//   - Brief: a peer card's "capabilities" (ids in catalog order, [] and
//     never null) and ext["agh.capabilities_brief"] ({id, summary} per id,
//     omitted entirely when the catalog is empty). ProjectPeerCard.
//   - Rich: the envelope-level ext["agh.capability_catalog"] of a whois
//     response, present only when the request's ext["agh.include"]
//     contains "capability_catalog", narrowed by ext["agh.capability_ids"]
//     with catalog order preserved. ParseWhoisRequest, RichCatalog.
//   - Transfer: body.capability of a kind:"capability" agh-network/v0
//     envelope, one full capability document with its canonical digest,
//     the envelope signed by the agent's Ed25519 key (proof type
//     "ampbundle.ed25519-jcs", over the RFC 8785 form of the envelope
//     without its proof). TransferEnvelope, ReceiveTransfer (which refuses
//     a bad proof, a from the proof's key does not belong to, a ts outside
//     the window, an unknown protocol or kind, a channel it does not
//     listen on, a to naming another peer, an unsigned envelope from a
//     DID or anything but a plain peer id, each by name),
//     VerifyCapability.
//
// The peer card carries every member of the page's example (CardMembers),
// trust_modes_supported saying whether the agent signs (TrustModes;
// docs/SPEC-DECISIONS.md AGH-2, AGH-3).
//
// The canonical digest is "sha256:" and the lowercase hex SHA-256 of the
// RFC 8785 (JCS) serialization of the capability document without its
// "digest" member (docs/FORMAT.md, "AGH projection"; the page leaves the
// canonicalization unnamed, docs/SPEC-DECISIONS.md AGH-1), as the
// document came: a received document's null and empty members count
// (AGH-7). Unknown keys of peer cards, capability documents and ext
// objects are preserved, in their RFC 8785 form (AGH-6).
//
// Every reader parses its document once, bounded at MaxDocumentBytes and
// MaxDocumentValues (too_large; AGH-4), and reads members by their exact
// names (a Capability or a PeerCard decoded with encoding/json too: their
// UnmarshalJSON is ParseCapability or ParsePeerCard, AGH-23); a signed or digested document with a
// member spelt like a known one but for case, which encoding/json would
// take for it, or for case and underscores, which a camelCase-aliasing
// reader would, or for case, underscores and dashes, which
// encoding/json/v2 matching names case-insensitively would, is refused
// (AGH-5, AGH-10, AGH-13).
//
// A capability id is 1 to 512 bytes of printable ASCII without spaces,
// compared byte for byte and never case-folded, wherever it is read or
// written: a non-ASCII id, which one peer's reader would fold into another
// id (the Kelvin sign into "k", the long s into "s") and another's would
// not, is refused, never sent (AGH-15).
//
// ReceiveTransferContext bounds the one step of reception that may wait,
// the resolution of a sender's DID other than a did:key, by its context
// (sender_unresolved; AGH-18). NewHandler keeps the peer card and the
// whole catalog it answered for a catalog, and builds at most
// MaxBuilding other answers at once (503 overloaded; AGH-19).
package agh
