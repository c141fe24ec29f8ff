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
//   - Transfer: body.capability of a kind:"capability" envelope, one full
//     capability document with its canonical digest. TransferBody,
//     VerifyCapability.
//
// The canonical digest is "sha256:" and the lowercase hex SHA-256 of the
// RFC 8785 (JCS) serialization of the capability document without its
// "digest" member (docs/FORMAT.md, "AGH projection"; the page leaves the
// canonicalization unnamed, docs/SPEC-DECISIONS.md AGH-1). Unknown keys of
// peer cards, capability documents and ext objects are preserved.
package agh
