/* rok import hf CONFIG.json | rok import megatron ARGS...: a model config
 * from the files people already have, printed (or written with -o) as the
 * rok config it becomes, every default filled in, for them to keep and
 * edit. What rok approximates or reads past is said on standard error. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rok/core.h"
#include "rok/model.h"

/* The mapped config, with --set applied and every rule checked, as the
 * config reader writes it back. */
static gboolean finish(json_object *config, const char *name, char **sets, const char *output, GError **error) {
  g_autofree char *text = rok_json_to_string(config);
  json_object_put(config);
  g_autoptr(RokModel) model = rok_model_parse(name, text, strlen(text), (const char *const *)sets, error);
  if (model == NULL)
    return FALSE;
  cli_print_model_notes(model);
  json_object *out = rok_model_to_json(model);
  if (output == NULL)
    return cli_print_json(out, error);
  gboolean ok = rok_json_write_file(out, output, error);
  json_object_put(out);
  return ok;
}

static gboolean import_hf(const char *path, char **sets, const char *output, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  if (doc == NULL)
    return FALSE;
  if (!rok_model_doc_is_hf(doc)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "%s: not a Hugging Face config.json (it has neither \"model_type\" nor \"architectures\")", path);
    return FALSE;
  }
  g_auto(GStrv) notes = NULL;
  json_object *config = rok_model_hf_to_config(doc, &notes, error);
  if (config == NULL)
    return FALSE;
  cli_print_notes("note", notes);
  g_autofree char *name = g_strdup_printf("%s (as `rok import hf` prints it)", path);
  return finish(config, name, sets, output, error);
}

/* Megatron's arguments are not rok's options: only -o/--output FILE and
 * --set KEY=VALUE are rok's, everything else goes to the importer. */
static gboolean import_megatron(int argc, char **argv, GError **error) {
  g_autoptr(GPtrArray) rest = g_ptr_array_new();
  g_autoptr(GPtrArray) sets = g_ptr_array_new();
  const char *output = NULL;
  for (int i = 0; i < argc; i++) {
    gboolean out = g_str_equal(argv[i], "-o") || g_str_equal(argv[i], "--output");
    if ((out || g_str_equal(argv[i], "--set")) && i + 1 >= argc) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s needs a value", argv[i]);
      return FALSE;
    }
    if (out)
      output = argv[++i];
    else if (g_str_equal(argv[i], "--set"))
      g_ptr_array_add(sets, argv[++i]);
    else
      g_ptr_array_add(rest, argv[i]);
  }
  g_ptr_array_add(sets, NULL);
  g_auto(GStrv) notes = NULL;
  json_object *config =
      rok_model_megatron_to_config((int)rest->len, (const char *const *)rest->pdata, &notes, error);
  if (config == NULL)
    return FALSE;
  cli_print_notes("note", notes);
  return finish(config, "Megatron-LM arguments (as `rok import megatron` prints them)", (char **)sets->pdata, output,
                error);
}

static const char *const help_text =
    "Usage:\n"
    "  rok import hf CONFIG.json [-o FILE] [--set KEY=VALUE] [--overlay FILE]\n"
    "  rok import megatron [-o FILE] [--set KEY=VALUE] MEGATRON-ARGS...\n\n"
    "Turn a Hugging Face config.json or Megatron-LM's arguments into a rok model config, printed or\n"
    "written to FILE. Every command that takes MODEL also reads a config.json directly.\n\n"
    "Hugging Face model types: %s.\n"
    "The training side (seq_len: the context length up to 4096; micro_batch 1; no parallelism) comes\n"
    "from --set or --overlay (a JSON object of config fields).\n\n"
    "Megatron-LM arguments read: the model's shape (--num-layers, --hidden-size, --ffn-hidden-size,\n"
    "--num-attention-heads, --kv-channels, --group-query-attention --num-query-groups, --seq-length,\n"
    "--max-position-embeddings, --vocab-size, --make-vocab-size-divisible-by), its layer (--swiglu,\n"
    "--normalization, --position-embedding-type, --disable-bias-linear, --add-qkv-bias,\n"
    "--untie-embeddings-and-output-weights, --window-size, --window-attn-skip-freq), attention\n"
    "(--use-flash-attn, --attention-backend, --multi-latent-attention, --q-lora-rank, --kv-lora-rank,\n"
    "--qk-head-dim, --qk-pos-emb-head-dim, --v-head-dim), experts (--num-experts, --moe-router-topk,\n"
    "--moe-ffn-hidden-size, --moe-shared-expert-intermediate-size, --moe-shared-expert-gate,\n"
    "--moe-layer-freq, --moe-expert-capacity-factor, --moe-aux-loss-coeff,\n"
    "--moe-router-load-balancing-type, --moe-router-enable-expert-bias), parallelism\n"
    "(--tensor-model-parallel-size, --pipeline-model-parallel-size, --sequence-parallel,\n"
    "--expert-model-parallel-size; --context-parallel-size > 1 is refused) and training\n"
    "(--micro-batch-size, --global-batch-size, --bf16, --fp16, --hidden-dropout, --attention-dropout,\n"
    "--use-distributed-optimizer, --fp8-format). Arguments that change no memory (learning rate, data, logging,\n"
    "fusions) and --recompute-* (rok decides) are read past and listed; any other is an error.\n\n"
    "Exit codes: 0 success, 1 runtime failure, 2 invalid usage or input.\n";

static int print_help(FILE *out) {
  g_autofree char *types = g_strjoinv(", ", (char **)rok_model_hf_types());
  fprintf(out, help_text, types);
  return out == stdout ? ROK_EXIT_OK : ROK_EXIT_INVALID;
}

static int run_hf(const RokCommand *self, int argc, char **argv) {
  RokCliCommon common = {0};
  g_autofree char *output = NULL;
  const GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the config to FILE instead of printing it", "FILE"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  gboolean ok = cli_parse(context, &argc, &argv, &error) && cli_check_hw_sets(NULL, common.hw_sets, &error) &&
                cli_positionals(argc, argv, 1, "CONFIG.json", &error) &&
                import_hf(argv[1], common.sets, output, &error);
  cli_common_clear(&common);
  return ok ? ROK_EXIT_OK : cli_fail(self->name, error);
}

int cli_cmd_import(int argc, char **argv) {
  const RokCommand *self = cli_find("import");
  g_set_prgname("rok import");
  if (argc < 2 || g_str_equal(argv[1], "--help") || g_str_equal(argv[1], "-h"))
    return print_help(argc < 2 ? stderr : stdout);
  if (g_str_equal(argv[1], "hf"))
    return run_hf(self, argc - 1, argv + 1);
  if (g_str_equal(argv[1], "megatron")) {
    GError *error = NULL;
    return import_megatron(argc - 2, argv + 2, &error) ? ROK_EXIT_OK : cli_fail(self->name, error);
  }
  GError *error = g_error_new(ROK_ERROR, ROK_ERROR_USAGE, "unknown source \"%s\": hf or megatron (see --help)",
                              argv[1]);
  return cli_fail(self->name, error);
}
