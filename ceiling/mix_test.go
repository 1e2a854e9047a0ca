package ceiling

import "testing"

func TestParseMix(t *testing.T) {
	tests := []struct {
		in, name string
		parts    int
		err      bool
	}{
		{"imix", "imix", 3, false},
		{"64:7,570:4,1518:1", "imix", 3, false},
		{"64:1,1518:1", "64:1,1518:1", 2, false},
		{"1518:3", "1518", 1, false},
		{"512", "512", 1, false},
		{"64:7,64:1", "", 0, true},
		{"64:0,128:1", "", 0, true},
		{"64:x", "", 0, true},
		{"63:1,128:1", "", 0, true},
		{"64:2000,128:1", "", 0, true},
	}
	for _, tc := range tests {
		m, err := ParseMix(tc.in)
		if (err != nil) != tc.err || err == nil && (m.Name != tc.name || len(m.Parts) != tc.parts) {
			t.Errorf("ParseMix(%q) = %+v, %v", tc.in, m, err)
		}
	}
	ms, err := ParseMixes("64,64:1,1518:1;128:1,256:1,imix")
	if err != nil || len(ms) != 4 || ms[1].Name != "64:1,1518:1" || ms[2].Name != "128:1,256:1" || ms[3].Name != "imix" {
		t.Fatalf("ParseMixes = %+v, %v", ms, err)
	}
	if _, err := ParseMixes("imix,64:7,570:4,1518:1"); err == nil {
		t.Error("imix given twice: no error")
	}
}
