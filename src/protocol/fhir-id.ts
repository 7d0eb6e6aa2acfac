/** A FHIR `id` (FHIR R4 §2.24.0.1, the `id` datatype): 1-64 of `A-Z a-z 0-9 - .`; a Patient id is one. */
export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;
