package clustertable

// SetCoversCheck turns routing.Covers off (on false) for Route's reduced decisions: a test that
// the equivalence tests can tell a wrong subset.
func SetCoversCheck(t *Table, on bool) { t.coversOff = !on }
