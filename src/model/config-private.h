/* Private to src/model: the parts of the model-config reader that live in
 * their own files. */
#pragma once

#include "rok/core.h"
#include "rok/model.h"

/* The training keys (framework, grad_dtype, momentum, optimizer_rank,
 * lora_*, frozen_layers) of `obj` into m->train. */
gboolean model_read_training(const RokJsonObj *obj, RokModel *m, GError **error);
/* Rules between them and the rest of the config, once it is read; fills
 * in the default gradient dtype. */
gboolean model_check_training(const RokJsonObj *obj, RokModel *m, GError **error);
void model_training_to_json(const RokModel *m, json_object *o);

/* Parameters of `layers` consecutive layers from the first of the stack on
 * one of `t` tensor-parallel ranks (src/model/params.c). */
guint64 model_layer_params(const RokModel *m, guint64 t, guint64 layers);
/* Parameters of the input embeddings on one of `t` ranks. */
guint64 model_embedding_params(const RokModel *m, guint64 t);

