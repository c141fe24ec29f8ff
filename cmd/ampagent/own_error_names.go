package main

import "github.com/ampbundle/ampbundle/amp"

// ownErrorNames are the names this program and the packages it runs on
// give errors of their own: usage mistakes, a key or TLS setup that does
// not load, a reply that does not verify, delivery and the transports'
// own refusals. A provider's CAP_RESULT naming one would pass its failure
// off as the CLI's or the client's own finding, so invoke keeps such a
// name only in the details (resultErrorName, CLI-25).
//
// The list is kept by hand and checked by
// TestProviderErrorNameCannotPoseAsOwnName, which reads the sources of the
// packages below (their ErrName constants, amp.Named, Failf and
// amp.ErrName names) and of this program (its Failf and ErrName names)
// and fails on any name missing here.
var ownErrorNames = setOfNames(
	// This program and internal/cliutil: the --json codes of its own
	// errors.
	"usage", "interrupted", "error", "misconfigured", "limit_exceeded", "invalid_hex",
	"key_error", "key_unreadable", "empty_passphrase", "passphrase_mismatch", "io_error",
	"tls_config", "invalid_ca", "invalid_config", "invalid_stream_dir", "demo_failed",
	"empty_trust_store", "handler_program_missing", "listen_failed", "mcp_failed",
	"no_served_capability", "restart_needed", "serve_failed", "token_file_exposed",
	"unknown_capability", "unsafe_listen", "unsafe_plain_tcp", string(errUnsafePlainHTTP),
	ErrPublisherKeyAsAgentKey, string(ErrProgramsBusy),
	// keyfile: --key.
	"file_exists", "insecure_key_file", "invalid_key_file", "invalid_public_key",
	"key_encrypted", "unsupported_key_encryption", "wrong_passphrase",
	// client: the reply does not answer the request, the outbox, streams.
	"wrong_sender", "wrong_recipient", "reply_mismatch", "unexpected_reply",
	"plaintext_reply", "outside_filter", "duplicate_descriptor", "too_many_pages",
	"cursor_loop", "query_too_large", "outbox_full", "recipient_outbox_full",
	"stream_incomplete", "stream_not_verified", "content_changed", "chunk_size_too_large",
	"params_not_encodable", "result_type_mismatch", "result_too_costly", "invalid_did_document",
	// transport, amphttp, ampstcp: delivery and the bindings' refusals.
	"unsigned_refusal", "redirect_refused", "reply_stalled", "busy",
	"empty_frame", "frame_too_large", "unknown_frame_type", "protocol_violation",
	"invalid_handshake", "handshake_refused", "going_away", "plain_remote", "invalid_url",
	// amp: the message does not verify or decode (docs/CLI.md §3.3).
	"ack_not_from_recipient", "body_and_enc", "decryption_failed", "duplicate_map_key",
	"encrypted_body", "expired", "future_timestamp", "hash_mismatch",
	"id_timestamp_mismatch", "indefinite_length", "invalid_body", "invalid_did",
	"invalid_signature", "invalid_utf8", "missing_field", "nested_batch",
	"no_eligible_key", "size_mismatch", "too_deep", "truncated", "unknown_did",
	"unknown_field", "unknown_type", "unsupported_encryption", "unsupported_version",
	"untrusted_relay_ack", "wrong_ack_target", "wrong_shape", "wrong_type",
	// capability: --id, --type and the descriptors of a reply.
	"ambiguous_type", "identity_conflict", "identity_mismatch", "invalid_field",
	"invalid_id", "invalid_json", "invalid_name", "invalid_range", "invalid_version",
	"malformed", "missing_locator", "unsupported_range",
)

// setOfNames is the set of names ns.
func setOfNames(ns ...string) map[amp.ErrName]bool {
	m := make(map[amp.ErrName]bool, len(ns))
	for _, n := range ns {
		m[amp.ErrName(n)] = true
	}
	return m
}
