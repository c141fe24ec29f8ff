package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

// loadIdentity reads an agent key file (ampagent keygen: an Ed25519 and an
// X25519 PKCS#8 key; a file readable by others is refused) and returns the
// identity: the did:key of the Ed25519 key, or did when it is set (a
// did:web whose document lists these keys).
func loadIdentity(c *cli.Context, env *cliutil.Env, keyPath, did string) (amp.Identity, error) {
	keys, err := cliutil.ReadPrivateKey(c, env, keyPath)
	if err != nil {
		return amp.Identity{}, err
	}
	return identityOf(keys, did)
}

// identityOf is the identity of the keys of a key file (loadIdentity).
func identityOf(keys *keyfile.Keys, did string) (amp.Identity, error) {
	if keys.Ed25519 == nil {
		return amp.Identity{}, cliutil.Failf(keyfile.ErrInvalidKeyFile, "the key file holds no ed25519 signing key")
	}
	if did != "" && (!amp.ValidDID(did) || amp.BareDID(did) != did) {
		return amp.Identity{}, cliutil.Usagef("--did must be a did without a fragment")
	}
	return keys.Identity(did)
}
