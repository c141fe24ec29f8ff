// Package keyfile reads and writes the key files of the ampbundle and
// ampagent tools, and of programs that embed the agent.
//
// Private keys are PKCS#8 (RFC 5958): PEM "PRIVATE KEY" blocks, PEM
// "ENCRYPTED PRIVATE KEY" blocks, or one key in DER. Encrypted keys use
// PBES2 (RFC 8018 §6.2) with PBKDF2 (HMAC-SHA-1 or SHA-2) or scrypt
// (RFC 7914 §7), and AES-CBC or AES-GCM (RFC 5084): what
// `openssl pkcs8 -topk8 -v2 aes-256-cbc` and `-scrypt` write. The
// passphrase comes from a callback (Options.Passphrase), asked only when a
// key is encrypted; a key whose derivation would cost more than bounded
// CPU or memory, or a file whose keys would together, is refused
// (unsupported_key_encryption) rather than obeyed. A file holds an Ed25519 signing key, an X25519 key agreement
// key, or both.
//
// Public keys are PKIX (SubjectPublicKeyInfo) as a PEM "PUBLIC KEY" block
// or DER, or a did:key.
//
// A private key file that group or others can read, or that another user
// than the reader (or root) owns, is refused (on Windows, judged by its
// owner and access list: CheckOwnerOnly): a leaked
// publisher or agent key is the one failure the air gap cannot contain.
// Key files are read only when they are regular files (OpenRegular): what
// a key's path leads to is examined before it is opened, so a FIFO or a
// device put in its place is refused at once, never opened or waited on.
// A file's shape is checked before its passphrase is asked.
//
// Every error is an *amp.Error named by one of the Err* constants, so a
// caller can tell "needs a passphrase" (ErrKeyEncrypted) from "wrong
// passphrase" (ErrWrongPassphrase) from "not a key file"
// (ErrInvalidKeyFile).
package keyfile
