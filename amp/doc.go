// Package amp implements the message layer of the Agent Messaging Protocol,
// RFC 001 (v0.30), with the corrections and decisions of docs/SPEC-DECISIONS.md.
//
// It owns the wire format and nothing else: the message model and its type
// and error codes, deterministic CBOR with a strict decoder, message ids,
// Sig_Input and Ed25519 signatures, authcrypt (NaCl box), the validation of
// a received message, DID documents with the key selection policy of §8.9,
// and the typed bodies of the core message types. Policy (who may do what)
// lives in the packages that import this one.
//
// # Wire format in one example
//
// RFC 001 vector A.2 is a MESSAGE with a null body from alice to bob. Its
// signature covers the deterministic CBOR encoding of
//
//	Sig_Input = ["AMP-v1", h'', {id, typ, ts, ttl, from, to}, h'f6']
//
//	84                      array(4)
//	   66 414d502d7631      "AMP-v1"
//	   40                   h''   (protected header: empty, never null)
//	   a6                   map(6), keys sorted by their encoded bytes
//	      62 6964 50 0000018d746b3700 0000000000000001     "id": 16 bytes
//	      62 746f 78 1d 6469643a7765623a…626f62             "to": "did:web:…:bob"
//	      62 7473 1b 0000018d746b3700                       "ts": 1707055200000
//	      63 74746c 1a 05265c00                             "ttl": 86400000
//	      63 747970 10                                      "typ": 0x10
//	      64 66726f6d 78 1f 6469643a7765623a…616c696365     "from": "did:web:…:alice"
//	   41 f6                bstr(deterministic_cbor(body)) = h'f6' (null)
//
// and the message itself is the map {v, id, to, ts, sig, ttl, typ, body,
// from} in the same key order. Shorter text keys sort first (docs/SPEC-DECISIONS.md AMP-4).
//
// # Deterministic CBOR
//
// Limits.Canonical is the one place where CBOR is checked and made
// deterministic. It works on bytes, not on decoded Go values, so every tag,
// bignum, float, negative integer and non-text map key survives exactly
// (docs/SPEC-DECISIONS.md AMP-9). It refuses, with 1001: indefinite lengths, duplicate map keys,
// invalid UTF-8, trailing bytes, truncation, ill-formed simple values, and
// anything over the caps in Limits (size, depth, array and map length,
// string length). Length headers are checked against the bytes that remain
// before anything is read, so a hostile header allocates nothing. The
// envelope's own fields have bounds too: a DID of at most 2048 bytes, and
// reply_to and thread_id of at most MaxRefBytes (docs/SPEC-DECISIONS.md
// AMP-11).
//
// ReadHead, ReadHeadFrom, SkipItem and ReadItem are the project's one strict
// CBOR head and item reader, used by every package that walks CBOR by hand
// (bundle files, capability bodies, schema values, transport frames): no
// indefinite lengths, no reserved additional information, no ill-formed
// simple values, every length checked against what remains (and, for
// ReadItem, against a size and depth budget) before anything is allocated.
// Head.Minimal tells a caller that needs deterministic heads whether the
// argument is in its shortest form.
//
// # Receiving
//
// Receiver.Receive validates a message in a fixed order, cheapest first:
// shape (1001), version (1004), type (1005), required fields (1001), time
// (1003), sender keys from the DID (3001), decryption (3001), signature
// (1002). The first failing step decides the code. Receive is stateless:
// replay protection (§8.4) belongs to the caller, after authentication.
//
// # Errors
//
// Every error returned by this package is an *Error carrying an AMP code, a
// stable snake_case name and a message that never echoes input. Code and
// ErrName values are errors.Is targets:
//
//	if errors.Is(err, amp.CodeInvalidSignature) { ... }
package amp
