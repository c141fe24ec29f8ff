// Package keyfile reads and writes the key files of the ampbundle and
// ampagent tools: private keys as PKCS#8 PEM ("PRIVATE KEY") in files of
// mode 0600, public keys as PKIX PEM ("PUBLIC KEY") or as a did:key.
//
// A private key file that group or others can read is refused: a leaked
// publisher or agent key is the one failure the air gap cannot contain.
package keyfile
