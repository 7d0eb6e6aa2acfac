/** The characters and length of a FHIR `id` (FHIR R4 §2.24.0.1, the `id` datatype), as a regex source without anchors. */
export const FHIR_ID_SOURCE = "[A-Za-z0-9\\-.]{1,64}";

/** A FHIR `id` (FHIR R4 §2.24.0.1, the `id` datatype): 1-64 of `A-Z a-z 0-9 - .`; a Patient id is one. */
export const FHIR_ID = new RegExp(`^${FHIR_ID_SOURCE}$`);
