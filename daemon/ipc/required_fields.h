// required_fields: the one place where a verified request's ABSENT fields become errors.
//
// FlatBuffers makes every field optional: a buffer can pass the verifier with a union type set
// and its table missing, an Id128 struct left out, an Image without a source. Handlers read such
// a field as a null pointer. check_required_fields walks what each verb needs before any handler
// runs and answers INVALID_ARGUMENT naming the field ("InferPair.image1.source is absent"), so
// that the handlers may read those fields without checking them again. Values (sizes, ids,
// names) are the handlers' business; only presence is checked here.
//
// verify_request calls it: a request that passes verify_request has every field listed here.
#pragma once

#include "gpu/status.h"
#include "schema/request_generated.h"

namespace recon::daemon {

// OK, or INVALID_ARGUMENT naming the first absent required field of the request's body
// (including the body itself, for a union type set without its table).
Status check_required_fields(const wire::Request& request);

}  // namespace recon::daemon
