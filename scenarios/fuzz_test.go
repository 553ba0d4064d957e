package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse: Parse never panics; what it refuses, it refuses with *Error
// values that name a file and a line; what it accepts validates, and
// written back in the format reads back the same.
//
//	go test ./scenarios -run '^$' -fuzz FuzzParse
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	lib, _ := filepath.Glob("library/*.yaml")
	defaults, _ := os.ReadFile("library/defaults.yaml")
	for _, file := range append(files, lib...) {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data, []byte(nil))
		f.Add(data, defaults)
	}
	f.Add([]byte("a: &a [*a]\nname: *a\n"), []byte("agent: &b {encoder: *b}\n"))
	f.Add([]byte("name: x\ndescription: d\nnetwork: {both: &p {delay: 1ms}, up: *p}\n"), []byte("duration: 1s\n"))
	f.Fuzz(func(t *testing.T, data, defaults []byte) {
		s, err := Parse("f.yaml", data, defaults)
		if err != nil {
			require.Nil(t, s)
			errs := Errors(err)
			require.NotEmpty(t, errs, "every error is an *Error: %v", err)
			var lines []string
			for _, e := range errs {
				require.Contains(t, []string{"f.yaml", "defaults.yaml"}, e.File, "%v", e)
				require.Positive(t, e.Line, "%v", e)
				require.NotEmpty(t, e.Msg, "%v", e)
				lines = append(lines, e.Error())
			}
			require.Equal(t, strings.Join(lines, "\n"), err.Error())
			return
		}
		require.NoError(t, s.Validate())
		requireRoundTrip(t, s)
	})
}

// TestAliasBombs: aliases that multiply a tree, or make it contain itself,
// cost no more than the files' size.
func TestAliasBombs(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {k: 1}\n")
	for i := 1; i <= 30; i++ {
		fmtLine := "l" + itoa(i) + ": &l" + itoa(i) + " {"
		for j := range 8 {
			fmtLine += "k" + itoa(j) + ": *l" + itoa(i-1) + ", "
		}
		b.WriteString(fmtLine + "}\n")
	}
	bomb := b.String()
	_, err := Parse("f.yaml", []byte(bomb+"agent: *l30\n"), []byte(bomb+"agent: *l30\n"))
	require.Error(t, err)
	_, err = Parse("f.yaml", []byte("name: &n [*n]\ndescription: d\nduration: 1s\n"), []byte("name: &m [*m]\n"))
	require.Error(t, err)
	_, err = Parse("f.yaml", []byte("agent: &a {refine: *a}\n"), []byte("agent: &b {refine: *b}\n"))
	require.Error(t, err)
}
