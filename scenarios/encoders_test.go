package scenarios

// The lab tells the loader its encoders (lab.EncoderPresets); the tests
// here stand in for it with the same list, which the messages they check
// name, and a test of the lab checks that the schema generated from it
// lists the encoders the lab resolves.
func init() {
	SetEncoders([]EncoderPreset{
		{Name: "busy-pc"}, {Name: "openh264"}, {Name: "openh264-asm"},
		{Name: "openh264-real"}, {Name: "openh264-real-1080p"}, {Name: "openh264-real-noskip"},
		{Name: "lossless-hextile", Lossless: true}, {Name: "lossless-tile", Lossless: true}, {Name: "lossless-zrle", Lossless: true},
		{Name: "nvenc", Hardware: true}, {Name: "quicksync", Hardware: true},
	})
}
