package scenarios

// objects lists every mapping kind of the format and its keys, for the
// tests that go through them all.
var objects = func() map[string][]string {
	out := map[string][]string{}
	for kind, t := range kinds() {
		out[kind] = keysOf(t)
	}
	return out
}()
