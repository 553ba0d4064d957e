package nat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBehavior(t *testing.T) {
	tests := []struct {
		in   string
		want Behavior
		err  bool
	}{
		{"endpoint-independent", EndpointIndependent, false},
		{"address-dependent", AddressDependent, false},
		{"address-and-port-dependent", AddressAndPortDependent, false},
		{"", 0, true},
		{"Endpoint-Independent", 0, true}, // strict, like the scenario loader
		{"symmetric", 0, true},            // a NAT type, not a behaviour
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBehavior(tc.in)
			if tc.err {
				require.ErrorIs(t, err, ErrBehavior)
				require.ErrorContains(t, err, `"endpoint-independent", "address-dependent" or "address-and-port-dependent"`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, got.String())

			var b Behavior
			require.NoError(t, b.UnmarshalText([]byte(tc.in)))
			require.Equal(t, tc.want, b)
			text, err := b.MarshalText()
			require.NoError(t, err)
			require.Equal(t, tc.in, string(text))
		})
	}
	require.Equal(t, "Behavior(7)", Behavior(7).String())
	_, err := Behavior(-1).MarshalText()
	require.ErrorIs(t, err, ErrBehavior)
	b := AddressDependent
	require.Error(t, b.UnmarshalText([]byte("nope")))
	require.Equal(t, AddressDependent, b, "a failed parse leaves the value alone")
}

func FuzzParseBehavior(f *testing.F) {
	for _, s := range behaviorNames {
		f.Add(s)
	}
	f.Add("address-dependent ")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBehavior(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBehavior)
			return
		}
		require.Equal(t, s, b.String(), "only the exact names parse, and they round-trip")
	})
}

func TestPresets(t *testing.T) {
	require.Equal(t, Config{}, FullCone, "the zero Config is a full cone")
	require.Equal(t, AddressDependent, RestrictedCone.Filtering)
	require.Equal(t, AddressAndPortDependent, PortRestrictedCone.Filtering)
	require.Equal(t, Config{Mapping: AddressAndPortDependent, Filtering: AddressAndPortDependent}, Symmetric)
	for _, c := range []Config{FullCone, RestrictedCone, PortRestrictedCone} {
		require.Equal(t, EndpointIndependent, c.Mapping)
	}
	require.Equal(t, DefaultLifetime, Config{}.lifetime())
}
