package scenarios

// The lab tells the loader its encoders (lab.EncoderPresets); the tests
// here stand in for it with the same list, which the messages they check
// name, and a test of the lab checks that the schema generated from it
// lists the encoders the lab resolves.
func init() {
	SetEncoders([]EncoderPreset{
		{Name: "busy-pc"}, {Name: "openh264"}, {Name: "openh264-asm"},
		{Name: "openh264-real", Real: true}, {Name: "openh264-real-1080p", Real: true}, {Name: "openh264-real-noskip", Real: true},
		{Name: "lossless-hextile", Lossless: true, Real: true}, {Name: "lossless-tile", Lossless: true, Real: true}, {Name: "lossless-zrle", Lossless: true, Real: true},
		{Name: "nvenc", Hardware: true}, {Name: "quicksync", Hardware: true},
	})
}
