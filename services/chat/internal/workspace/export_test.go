package workspace

// SearchSQL is the search query, for the test that checks it uses the
// indexes.
const SearchSQL = searchSQL
