package client

import "context"

// Handler answers one AMP message in the same process, as an
// *agent.Agent does (Agent.Handle): a message in, the reply out (nil when
// the message is not answered).
type Handler interface {
	Handle(ctx context.Context, msg []byte) ([]byte, error)
}

// Loopback is a Transport into h in the same process: no binding, no
// peer (the agent counts the message as the process's own).
func Loopback(h Handler) Transport {
	return TransportFunc(h.Handle)
}
