package writer

// NamesPerPart is namesPerPart, for the tests of package writer_test.
const NamesPerPart = namesPerPart

// LostNames is how many names w holds lost to an older claim now.
func (w *Writer) LostNames() int { return w.lostCount() }
