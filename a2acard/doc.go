// Package a2acard writes and verifies signed A2A Agent Cards (A2A protocol
// 1.0, the AgentCard of specification/a2a.proto, signed as its §8.4
// specifies) for an AMP agent: the card names the agent, the interface it
// serves AMP on, one skill per capability version it serves, and, in the
// capabilities extension ExtensionURI, each version's bundle id and the
// hashes of its input and output schemas, so the signature pins them.
//
// Signing (Sign): the card without its "signatures" member, with no
// member holding a default value, is put in its RFC 8785 (JCS) form
// (internal/jcs); that is the JWS payload, detached. The protected header
// is {"alg":"EdDSA","kid":KID,"typ":"JOSE"} (in its JCS form), KID naming
// the agent's Ed25519 key: its did:key verification method
// ("did:key:z6Mk…#z6Mk…", DIDKeyID) or the did:web key id the operator
// gives. The signature is Ed25519 over ASCII(BASE64URL(protected) || "."
// || BASE64URL(payload)) (RFC 7515 §5.1, RFC 8037), and the card's
// "signatures" array holds {"protected","signature"}, both base64url
// without padding.
//
// Verifying (Verify) takes the card's bytes, a public key and the key id
// that names it, and fails closed with one error name per reason
// (ErrTooLarge, ErrMalformed, ErrDuplicateMember, ErrNumberNotCanonical,
// ErrUnsigned, ErrSignatureMalformed, ErrHeaderUnsupported,
// ErrAlgUnsupported, ErrKidMismatch, ErrBadSignature, ErrInvalid). The
// input is bounded (MaxCardBytes, MaxSignatures, nesting jcs.MaxDepth) and
// never quoted in an error. docs/FORMAT.md ("A2A Agent Card") has the
// format and a test vector; docs/SPEC-DECISIONS.md A2A-1 to A2A-8 the
// choices the A2A text leaves open.
package a2acard
