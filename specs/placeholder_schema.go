package specs

// PLACEHOLDER: replaced by the JSON-Schema implementation (schema.go owner).
type Schema struct{}
