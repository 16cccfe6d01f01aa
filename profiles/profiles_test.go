package profiles

import (
	"strings"
	"testing"
)

func TestEmbeddedProfilesParse(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "cx5,cx6,rxe" {
		t.Fatalf("profiles: %v", names)
	}
}

func TestDetect(t *testing.T) {
	for want, id := range map[string][3]any{
		"cx5": {"mlx5_core", uint32(0x02c9), uint32(4119)},
		"cx6": {"mlx5_core", uint32(0x02c9), uint32(4125)},
		"rxe": {"rxe", uint32(0xffffff), uint32(0)},
	} {
		p, err := Detect(id[0].(string), id[1].(uint32), id[2].(uint32))
		if err != nil || p.Name != want {
			t.Errorf("Detect(%v) = %q, %v; want %s", id, p.Name, err, want)
		}
	}
	if _, err := Detect("bnxt_re", 0x14e4, 5); err == nil || !strings.Contains(err.Error(), "--profile") {
		t.Fatalf("unknown NIC must say how to pick a profile: %v", err)
	}
}

func TestParseRefusesBadProfiles(t *testing.T) {
	good, _ := embedded.ReadFile("rxe.yaml")
	for want, bad := range map[string]string{
		"not on the grid": strings.Replace(string(good), "write: {msg_size_bytes: 65536, sq_depth: 128", "write: {msg_size_bytes: 65536, sq_depth: 100", 1),
		"ascending":       strings.Replace(string(good), "sq_depth: [8, 32, 128, 512]", "sq_depth: [512, 8, 32, 128]", 1),
		"field":           string(good) + "\nbogus: 1\n",
	} {
		if _, err := Parse([]byte(bad), "test"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
}
