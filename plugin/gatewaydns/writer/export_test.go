package writer

// NamesPerPart is namesPerPart, for the tests of package writer_test.
const NamesPerPart = namesPerPart
