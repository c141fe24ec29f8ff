package mcpbridge

// checkBody counts a stdio body as the bridge does before the SDK reads
// it (messageCounter): the tests' short form.
func checkBody(data []byte, maxArgs int) error {
	return messageCounter(data, maxArgs, false).text(roleRoot)
}

// checkPostBody counts the body of an HTTP POST as the endpoint does
// (messageCounter with post): the tests' short form.
func checkPostBody(data []byte, maxArgs int) error {
	return messageCounter(data, maxArgs, true).text(roleRoot)
}
