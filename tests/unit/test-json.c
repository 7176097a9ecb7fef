/* JSON reading with located errors, overrides, and canonical writing. */
#include "rok/core.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static RokJsonDoc *parse_ok(const char *text) {
  g_autoptr(GError) error = NULL;
  RokJsonDoc *doc = rok_json_doc_parse("x.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_nonnull(doc);
  return doc;
}

static void parse_accepts(const char *text) {
  rok_json_doc_free(parse_ok(text));
}

static void parse_fails(const char *text, gsize length, const char *expected) {
  g_autoptr(GError) error = NULL;
  RokJsonDoc *doc = rok_json_doc_parse("x.json", text, length, &error);
  g_assert_null(doc);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_cmpstr(error->message, ==, expected);
}

#define PARSE_FAILS(text, expected) parse_fails(text, strlen(text), expected)

/* ---- syntax ---- */

static void test_syntax_positions(void) {
  PARSE_FAILS("{\n  \"a\": 1,\n  \"b\": x\n}\n", "x.json:3:8: unexpected character");
  PARSE_FAILS("{\n  \"a\": 1,\n  \"b\": [1, 2,]\n}\n", "x.json:3:14: unexpected character");
  /* Columns count characters: "größe" is 5 characters, 7 bytes. */
  PARSE_FAILS("{\"gr\u00f6\u00dfe\": 1, \"x\": @}", "x.json:1:19: unexpected character");
  PARSE_FAILS("{\r\n  \"a\": 1,\r\n  \"b\": }\r\n", "x.json:3:8: unexpected character");
  PARSE_FAILS("{\"a\": 1", "x.json:1:8: unexpected end of data");
  PARSE_FAILS("{\"a\": 1}\n\n  x", "x.json:3:3: unexpected character");
  PARSE_FAILS("{\"a\": 1} {}", "x.json:1:10: unexpected character");
  PARSE_FAILS("", "x.json: empty document (expected a JSON value)");
  PARSE_FAILS(" \n\t ", "x.json: empty document (expected a JSON value)");
  PARSE_FAILS("{\"a\": 01}", "x.json:1:9: number expected");
  PARSE_FAILS("{\"a\": \"\xff\"}", "x.json:1:8: invalid utf-8 string");
  /* What json-c's own UTF-8 check lets through: code points past U+10FFFF
   * (lead bytes F5-F7), encoded surrogates, overlong forms. */
  PARSE_FAILS("{\"gpu\": {\"\xf7\x9a\x92\x93ww\": 1}}", "x.json:1:11: invalid utf-8 string");
  PARSE_FAILS("[\"\xed\xa0\x80\"]", "x.json:1:3: invalid utf-8 string");
  PARSE_FAILS("[\"\xc0\x80\"]", "x.json:1:3: invalid utf-8 string");
  PARSE_FAILS("\xef\xbb\xbf{}", "x.json:1:1: a byte order mark (U+FEFF) starts the text; JSON has none (save "
                                "the file as UTF-8 without BOM)");
  /* json-c would cut the key short at the NUL: "hid". */
  PARSE_FAILS("{\"a\": 1,\n \"hid\\u0000den\": 2}", "x.json:2:2: a key must not contain \\u0000");
  parse_accepts("{\"a\": \"NUL \\u0000 in a value\"}");
  PARSE_FAILS("// comment\n{}", "x.json:1:1: unexpected character");
  parse_fails("{\"a\": 1,\n \"b\": \0}", 17, "x.json:2:7: NUL byte in the text");
}

/* What json-c's strict mode lets through. */
static void test_syntax_strict(void) {
  PARSE_FAILS("{\"x\": NaN}", "x.json:1:7: NaN is not a JSON number");
  PARSE_FAILS("{\n  \"x\": [1, Infinity]\n}", "x.json:2:12: Infinity is not a JSON number");
  PARSE_FAILS("[-Infinity]", "x.json:1:2: -Infinity is not a JSON number");
  PARSE_FAILS("{'a': 1}", "x.json:1:2: keys must be in double quotes");
  PARSE_FAILS("{\"a\": 'b'}", "x.json:1:7: unexpected character"); /* json-c's own check */
  PARSE_FAILS("{\"a\": 1.}", "x.json:1:7: digits must follow the decimal point");
  PARSE_FAILS("{\"a\": \"tab\there\"}", "x.json:1:11: control character in a string (write it as an escape "
                                          "such as \\n or \\t)");
  PARSE_FAILS("{\"a\": 1e400}", "x.json:1:7: number 1e400 is too large");
  /* Still fine: */
  parse_accepts("{\"a\": -0, \"b\": 1.5e-300, \"c\": \"\\ud83d\\ude00\", \"d\": 1E+2}");
  parse_accepts("42");
  parse_accepts("\"top\"");
  g_autoptr(RokJsonDoc) d = parse_ok("null");
  g_assert_null(rok_json_doc_root(d));
}

static void test_duplicate_keys(void) {
  PARSE_FAILS("{\n  \"a\": 1,\n  \"b\": {\"c\": 1, \"c\": 2}\n}", "x.json:3:17: duplicate key \"c\"");
  PARSE_FAILS("{\"a\": 1, \"\\u0061\": 2}", "x.json:1:10: duplicate key \"a\"");
  PARSE_FAILS("{\"a\": {\"x\": 1}, \"b\": 2, \"a\": 3}", "x.json:1:25: duplicate key \"a\"");
  /* The same key in different objects, and objects after nested ones. */
  parse_accepts("{\"a\": {\"x\": 1, \"y\": {\"x\": 2}}, \"b\": [{\"x\": 1}, {\"x\": 2}], \"x\": {\"x\": 3}}");
}

static void test_integer_overflow(void) {
  PARSE_FAILS("{\"n\": 99999999999999999999}", "x.json:1:7: integer 99999999999999999999 does not fit in 64 bits");
  PARSE_FAILS("{\"n\": 18446744073709551616}", "x.json:1:7: integer 18446744073709551616 does not fit in 64 bits");
  PARSE_FAILS("{\"n\": -9223372036854775809}",
              "x.json:1:7: integer -9223372036854775809 does not fit in 64 bits");
  /* The limits themselves are exact, not mistaken for saturation. */
  g_autoptr(RokJsonDoc) doc = parse_ok("{\"u\": 18446744073709551615, \"i\": -9223372036854775808, "
                                       "\"j\": 9223372036854775807}");
  g_auto(RokJsonObj) root = {0};
  g_autoptr(GError) error = NULL;
  guint64 u = 0;
  gint64 i = 0, j = 0;
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_true(rok_json_get_uint(&root, "u", TRUE, 0, G_MAXUINT64, &u, &error));
  g_assert_true(rok_json_get_int(&root, "i", TRUE, G_MININT64, G_MAXINT64, &i, &error));
  g_assert_true(rok_json_get_int(&root, "j", TRUE, G_MININT64, G_MAXINT64, &j, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(u, ==, G_MAXUINT64);
  g_assert_cmpint(i, ==, G_MININT64);
  g_assert_cmpint(j, ==, G_MAXINT64);
  g_assert_false(rok_json_get_int(&root, "u", TRUE, G_MININT64, G_MAXINT64, &i, &error));
  g_assert_cmpstr(error->message, ==, "x.json:1:7: \"u\": must be an integer, not 18446744073709551615");
}

/* `levels` levels of values: arrays and objects in turn, the innermost an
 * array holding `inner`. */
static char *nested(int levels, const char *inner) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < levels; i++)
    g_string_append(s, i % 2 && i + 1 < levels ? "{\"k\": " : "[");
  g_string_append(s, inner);
  for (int i = levels; i-- > 0;)
    g_string_append(s, i % 2 && i + 1 < levels ? "}" : "]");
  return g_string_free(s, FALSE);
}

/* json-c's depth counts values: 64 nested containers, or 63 around a
 * scalar, is the deepest document accepted. */
static void test_nesting(void) {
  g_autofree char *empty64 = nested(64, "");
  g_autofree char *number63 = nested(63, "1");
  g_autofree char *empty65 = nested(65, "");
  g_autofree char *number64 = nested(64, "1");
  parse_accepts(empty64);
  parse_accepts(number63);
  /* Level 65 starts at byte 32 * 7 = 224 (the 65th bracket), or 219 (the number). */
  PARSE_FAILS(empty65, "x.json:1:225: nesting too deep");
  PARSE_FAILS(number64, "x.json:1:220: nesting too deep"); /* at the number */
}

/* ---- getters and messages ---- */

static const char model_text[] = "{\n"
                                 "  \"name\": \"tiny\",\n"
                                 "  \"arch\": \"gtp\",\n"
                                 "  \"layers\": \"forty\",\n"
                                 "  \"zero_stage\": 4,\n"
                                 "  \"dropout\": 1.5,\n"
                                 "  \"flash\": \"yes\",\n"
                                 "  \"gpu\": {\n"
                                 "    \"memroy\": \"40GiB\",\n"
                                 "    \"memory\": \"40Gx\",\n"
                                 "    \"hbm\": true,\n"
                                 "    \"peak\": \"312 TFLOP/s\",\n"
                                 "    \"latency\": \"4\u00b5s\"\n"
                                 "  },\n"
                                 "  \"ops\": [\n"
                                 "    {\"inputs\": [0]},\n"
                                 "    {\"inputs\": [0, 1, 7]},\n"
                                 "    5\n"
                                 "  ]\n"
                                 "}\n";

typedef struct {
  RokJsonDoc *doc;
  RokJsonObj root;
  RokJsonObj gpu;
} Model;

static void model_setup(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  m->doc = parse_ok(model_text);
  g_assert_true(rok_json_root(m->doc, &m->root, &error));
  g_assert_true(rok_json_child(&m->root, "gpu", TRUE, &m->gpu, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(m->gpu.path, ==, "gpu");
}

static void model_teardown(Model *m, gconstpointer data) {
  (void)data;
  rok_json_obj_clear(&m->gpu);
  rok_json_obj_clear(&m->root);
  rok_json_doc_free(m->doc);
}

static void assert_error(GError **error, int code, const char *expected) {
  g_assert_error(*error, ROK_ERROR, code);
  g_assert_cmpstr((*error)->message, ==, expected);
  g_clear_error(error);
}

static void test_type_errors(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  guint64 u = 77;
  gint64 ns = 0;
  double d = 0;
  gboolean b = FALSE;
  int e = -1;
  static const char *const archs[] = {"gpt", "bert", "t5", "llama", NULL};
  g_assert_false(rok_json_get_uint(&m->root, "layers", TRUE, 1, G_MAXUINT64, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:4:13: \"layers\": must be a positive integer, not \"forty\"");
  g_assert_cmpuint(u, ==, 77);
  g_assert_false(rok_json_get_uint(&m->root, "zero_stage", TRUE, 0, 3, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:5:17: \"zero_stage\": must be an integer from 0 to 3, not 4");
  g_assert_false(rok_json_get_double(&m->root, "dropout", TRUE, 0, 1, &d, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:6:14: \"dropout\": must be a number from 0 to 1, not 1.5");
  g_assert_false(rok_json_get_bool(&m->root, "flash", TRUE, &b, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:7:12: \"flash\": must be true or false, not \"yes\"");
  g_assert_false(rok_json_get_enum(&m->root, "arch", TRUE, archs, &e, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "x.json:3:11: \"arch\": must be one of \"gpt\", \"bert\", \"t5\", \"llama\", not \"gtp\"; "
               "did you mean \"gpt\"?");
  g_assert_false(rok_json_get_size(&m->gpu, "memory", TRUE, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "x.json:10:15: \"gpu.memory\": invalid size \"40Gx\": unknown unit \"Gx\" (expected B, kB, MB, "
               "GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)");
  g_assert_false(rok_json_get_size(&m->gpu, "hbm", TRUE, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "x.json:11:12: \"gpu.hbm\": must be a size such as \"40GiB\" or a positive whole number of "
               "bytes, not true");
  g_assert_false(rok_json_get_rate(&m->gpu, "hbm", TRUE, &d, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "x.json:11:12: \"gpu.hbm\": must be a rate such as \"25GB/s\" or a positive number per "
               "second, not true");
  g_assert_false(rok_json_get_time(&m->gpu, "peak", TRUE, &ns, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "x.json:12:13: \"gpu.peak\": invalid time \"312 TFLOP/s\": unknown unit \"TFLOP/s\" (expected "
               "ns, us, \u00b5s, ms, s, min, h, d or y)");
  g_assert_false(rok_json_get_array(&m->gpu, "peak", TRUE, &(json_object *){NULL}, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:12:13: \"gpu.peak\": must be an array, not \"312 TFLOP/s\"");
  /* The right ones. */
  g_assert_true(rok_json_get_rate(&m->gpu, "peak", TRUE, &d, &error));
  g_assert_cmpfloat(d, ==, 312e12);
  g_assert_true(rok_json_get_time(&m->gpu, "latency", TRUE, &ns, &error));
  g_assert_cmpint(ns, ==, 4000);
  g_assert_no_error(error);
}

static void test_missing_and_defaults(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  guint64 u = 99;
  g_autofree char *s = g_strdup("default");
  g_assert_true(rok_json_get_uint(&m->root, "heads", FALSE, 1, G_MAXUINT64, &u, &error));
  g_assert_cmpuint(u, ==, 99);
  g_assert_true(rok_json_get_string(&m->root, "source", FALSE, &s, &error));
  g_assert_cmpstr(s, ==, "default");
  g_assert_true(rok_json_get_string(&m->root, "name", FALSE, &s, &error));
  g_assert_cmpstr(s, ==, "tiny");
  g_assert_no_error(error);
  g_assert_false(rok_json_get_uint(&m->root, "heads", TRUE, 1, G_MAXUINT64, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json: required member \"heads\" is missing");
  g_assert_false(rok_json_get_size(&m->gpu, "capacity", TRUE, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:8:10: \"gpu\": required member \"capacity\" is missing");
  /* An absent optional object has no members, all absent. */
  g_auto(RokJsonObj) nvme = {0};
  g_assert_true(rok_json_child(&m->root, "nvme", FALSE, &nvme, &error));
  g_assert_null(nvme.obj);
  g_assert_cmpstr(nvme.path, ==, "nvme");
  g_assert_true(rok_json_get_uint(&nvme, "devices", FALSE, 1, 64, &u, &error));
  g_assert_cmpuint(u, ==, 99);
  g_assert_false(rok_json_get_uint(&nvme, "devices", TRUE, 1, 64, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json: \"nvme\": required member \"devices\" is missing");
  g_assert_false(rok_json_child(&m->root, "name", FALSE, &nvme, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:2:11: \"name\": must be an object, not \"tiny\"");
}

static void test_arrays_and_elements(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  json_object *ops = NULL;
  g_assert_true(rok_json_get_array(&m->root, "ops", TRUE, &ops, &error));
  g_assert_cmpuint(json_object_array_length(ops), ==, 3);
  g_autoptr(GArray) inputs = g_array_new(FALSE, FALSE, sizeof(guint));
  g_auto(RokJsonObj) op = {0};
  g_assert_true(rok_json_element(&m->root, "ops", ops, 0, &op, &error));
  g_assert_cmpstr(op.path, ==, "ops[0]");
  g_assert_true(rok_json_get_index_array(&op, "inputs", TRUE, 5, inputs, &error));
  g_assert_cmpuint(inputs->len, ==, 1);
  rok_json_obj_clear(&op);
  g_assert_true(rok_json_element(&m->root, "ops", ops, 1, &op, &error));
  g_assert_false(rok_json_get_index_array(&op, "inputs", TRUE, 5, inputs, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:17:23: \"ops[1].inputs[2]\": must be an integer from 0 to 5, not 7");
  g_assert_cmpuint(inputs->len, ==, 1); /* nothing appended on error */
  g_assert_true(rok_json_get_index_array(&op, "inputs", TRUE, 7, inputs, &error));
  g_assert_cmpuint(inputs->len, ==, 4);
  g_assert_cmpuint(g_array_index(inputs, guint, 3), ==, 7);
  rok_json_obj_clear(&op);
  g_assert_false(rok_json_element(&m->root, "ops", ops, 2, &op, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:18:5: \"ops[2]\": must be an object, not 5");
  g_assert_null(op.path);
}

static void test_unknown_keys(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  static const char *const gpu_keys[] = {"memory", "hbm", "peak", "latency", NULL};
  static const char *const few_keys[] = {"alpha", "beta", NULL};
  g_assert_false(rok_json_only_keys(&m->gpu, gpu_keys, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:9:5: \"gpu.memroy\": unknown key; did you mean \"memory\"?");
  g_assert_false(rok_json_only_keys(&m->gpu, few_keys, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:9:5: \"gpu.memroy\": unknown key (known keys: \"alpha\", \"beta\")");
  static const char *const all_gpu[] = {"memroy", "memory", "hbm", "peak", "latency", NULL};
  g_assert_true(rok_json_only_keys(&m->gpu, all_gpu, &error));
  g_assert_no_error(error);
}

static void test_error_paths(Model *m, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  rok_json_error(&error, m->doc, "", "the model does not fit");
  assert_error(&error, ROK_ERROR_INPUT, "x.json: the model does not fit");
  rok_json_error(&error, m->doc, "ops[1].inputs[1]", "bad input %d", 1);
  assert_error(&error, ROK_ERROR_INPUT, "x.json:17:20: \"ops[1].inputs[1]\": bad input 1");
  rok_json_error(&error, m->doc, "gpu.latency", "too slow");
  assert_error(&error, ROK_ERROR_INPUT, "x.json:13:16: \"gpu.latency\": too slow");
  rok_json_error(&error, m->doc, "gpu.nothing", "absent");
  assert_error(&error, ROK_ERROR_INPUT, "x.json: \"gpu.nothing\": absent");
  rok_json_error(&error, m->doc, "ops[9]", "absent");
  assert_error(&error, ROK_ERROR_INPUT, "x.json: \"ops[9]\": absent");
  rok_json_error(&error, m->doc, "ops.x", "not an object");
  assert_error(&error, ROK_ERROR_INPUT, "x.json: \"ops.x\": not an object");
  rok_json_error(NULL, m->doc, "gpu", "nobody listens");
}

static void test_get_units(void) {
  g_autoptr(RokJsonDoc) doc = parse_ok("{\"a\": 4096, \"b\": 4e9, \"c\": 1.5, \"d\": 0, \"e\": \"0GiB\", \"f\": -1,"
                                       " \"g\": 0.5, \"h\": \"10ms\", \"i\": 9300000000, \"j\": \"1.6TB\","
                                       " \"k\": 25e9, \"l\": 0, \"m\": \"a\\u0000b\", \"n\": null}");
  g_auto(RokJsonObj) root = {0};
  g_autoptr(GError) error = NULL;
  guint64 bytes = 0;
  double rate = 0;
  gint64 ns = 0;
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_true(rok_json_get_size(&root, "a", TRUE, &bytes, &error));
  g_assert_cmpuint(bytes, ==, 4096);
  g_assert_true(rok_json_get_size(&root, "b", TRUE, &bytes, &error));
  g_assert_cmpuint(bytes, ==, G_GUINT64_CONSTANT(4000000000));
  g_assert_true(rok_json_get_size(&root, "j", TRUE, &bytes, &error));
  g_assert_cmpuint(bytes, ==, G_GUINT64_CONSTANT(1600000000000));
  g_assert_no_error(error);
  static const char *const bad_sizes[] = {"c", "d", "e", "f", "n"};
  for (gsize i = 0; i < G_N_ELEMENTS(bad_sizes); i++) {
    g_assert_false(rok_json_get_size(&root, bad_sizes[i], TRUE, &bytes, &error));
    g_assert_nonnull(strstr(error->message, "must be a size such as \"40GiB\""));
    g_clear_error(&error);
  }
  g_assert_true(rok_json_get_rate(&root, "k", TRUE, &rate, &error));
  g_assert_cmpfloat(rate, ==, 25e9);
  g_assert_false(rok_json_get_rate(&root, "l", TRUE, &rate, &error));
  g_clear_error(&error);
  g_assert_true(rok_json_get_time(&root, "g", TRUE, &ns, &error));
  g_assert_cmpint(ns, ==, 500000000);
  g_assert_true(rok_json_get_time(&root, "h", TRUE, &ns, &error));
  g_assert_cmpint(ns, ==, 10000000);
  g_assert_true(rok_json_get_time(&root, "l", TRUE, &ns, &error));
  g_assert_cmpint(ns, ==, 0);
  g_assert_no_error(error);
  g_assert_false(rok_json_get_time(&root, "f", TRUE, &ns, &error));
  g_assert_nonnull(strstr(error->message, "\"f\": must be a time such as \"10ms\""));
  g_clear_error(&error);
  g_assert_false(rok_json_get_time(&root, "i", TRUE, &ns, &error));
  g_assert_nonnull(strstr(error->message, "\"i\": too long"));
  g_clear_error(&error);
  g_autofree char *s = NULL;
  g_assert_false(rok_json_get_string(&root, "m", TRUE, &s, &error));
  g_assert_nonnull(strstr(error->message, "\"m\": must not contain a NUL character"));
  g_assert_null(s);
}

/* Ranges in messages, the root, and objects filled in place. */
static void test_messages(void) {
  g_autoptr(RokJsonDoc) doc = parse_ok("{\"n\": -5, \"x\": -0.5, \"o\": {\"p\": {\"q\": 1}}}");
  g_autoptr(GError) error = NULL;
  g_auto(RokJsonObj) root = {0}, o = {0};
  gint64 i = 0;
  double d = 0;
  g_assert_cmpstr(rok_json_doc_name(doc), ==, "x.json");
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_false(rok_json_get_int(&root, "n", TRUE, 0, G_MAXINT64, &i, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:7: \"n\": must be a non-negative integer, not -5");
  g_assert_false(rok_json_get_int(&root, "n", TRUE, -4, G_MAXINT64, &i, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:7: \"n\": must be an integer of at least -4, not -5");
  g_assert_false(rok_json_get_int(&root, "n", TRUE, G_MININT64, -6, &i, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:7: \"n\": must be an integer of at most -6, not -5");
  g_assert_true(rok_json_get_int(&root, "n", TRUE, -5, 5, &i, &error));
  g_assert_cmpint(i, ==, -5);
  g_assert_false(rok_json_get_double(&root, "x", TRUE, 0, G_MAXDOUBLE, &d, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:16: \"x\": must be a number of at least 0, not -0.5");
  g_assert_false(rok_json_get_double(&root, "o", TRUE, -INFINITY, INFINITY, &d, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:27: \"o\": must be a finite number, not an object");
  g_assert_true(rok_json_get_double(&root, "n", TRUE, -INFINITY, INFINITY, &d, &error));
  g_assert_cmpfloat(d, ==, -5);
  static const char *const modes[] = {"standard", "flash", NULL};
  int mode = 7;
  g_assert_false(rok_json_get_enum(&root, "n", TRUE, modes, &mode, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:1:7: \"n\": must be one of \"standard\", \"flash\", not -5");
  g_assert_cmpint(mode, ==, 7);
  /* out == parent walks down in place. */
  g_assert_true(rok_json_child(&root, "o", TRUE, &o, &error));
  g_assert_true(rok_json_child(&o, "p", TRUE, &o, &error));
  g_assert_cmpstr(o.path, ==, "o.p");
  g_assert_true(rok_json_get_int(&o, "q", TRUE, 0, 1, &i, &error));
  g_assert_no_error(error);

  g_autoptr(RokJsonDoc) array = parse_ok("[1, 2]");
  g_auto(RokJsonObj) none = {0};
  g_assert_false(rok_json_root(array, &none, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json: the document must be a JSON object, not an array");
  g_assert_null(none.path);
  rok_json_error(&error, NULL, "a.b", "no document");
  assert_error(&error, ROK_ERROR_INPUT, "\"a.b\": no document");
}

/* ---- overrides ---- */

static void test_overrides(void) {
  g_autoptr(RokJsonDoc) doc = parse_ok("{\n  \"micro_batch\": 1,\n  \"name\": \"x\",\n  \"gpu\": {\"memory\": 1},\n"
                                       "  \"layers\": 2\n}\n");
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_json_doc_set(doc, "micro_batch=8", "--set micro_batch=8", &error));
  g_assert_true(rok_json_doc_set(doc, "gpu.memory=40GiB", "--set gpu.memory=40GiB", &error));
  g_assert_true(rok_json_doc_set(doc, "gpu.hbm.bandwidth=\"2TB/s\"", "--set gpu.hbm.bandwidth=\"2TB/s\"", &error));
  g_assert_true(rok_json_doc_set(doc, "name=7", "--set name=7", &error));
  g_assert_true(rok_json_doc_set(doc, "flash=true", "--set flash=true", &error));
  g_assert_true(rok_json_doc_set(doc, "dropout=0.25", "--set dropout=0.25", &error));
  g_assert_true(rok_json_doc_set(doc, "tags=[1, 2]", "--set tags=[1, 2]", &error));
  g_assert_true(rok_json_doc_set(doc, "note=NaN", "--set note=NaN", &error));
  g_assert_true(rok_json_doc_set(doc, "empty=", "--set empty=", &error));
  g_assert_no_error(error);

  g_auto(RokJsonObj) root = {0}, gpu = {0}, hbm = {0};
  guint64 u = 0;
  gboolean b = FALSE;
  double d = 0;
  g_autofree char *s = NULL;
  json_object *tags = NULL;
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_true(rok_json_get_uint(&root, "micro_batch", TRUE, 1, G_MAXUINT64, &u, &error));
  g_assert_cmpuint(u, ==, 8);
  g_assert_true(rok_json_child(&root, "gpu", TRUE, &gpu, &error));
  g_assert_true(rok_json_get_size(&gpu, "memory", TRUE, &u, &error));
  g_assert_cmpuint(u, ==, G_GUINT64_CONSTANT(40) << 30);
  g_assert_true(rok_json_child(&gpu, "hbm", TRUE, &hbm, &error));
  g_assert_true(rok_json_get_rate(&hbm, "bandwidth", TRUE, &d, &error));
  g_assert_cmpfloat(d, ==, 2e12);
  g_assert_true(rok_json_get_string(&root, "name", TRUE, &s, &error));
  g_assert_cmpstr(s, ==, "7");
  g_assert_true(rok_json_get_bool(&root, "flash", TRUE, &b, &error));
  g_assert_true(b);
  g_assert_true(rok_json_get_double(&root, "dropout", TRUE, 0, 1, &d, &error));
  g_assert_cmpfloat(d, ==, 0.25);
  g_assert_true(rok_json_get_array(&root, "tags", TRUE, &tags, &error));
  g_assert_cmpuint(json_object_array_length(tags), ==, 2);
  g_assert_true(rok_json_get_string(&root, "note", TRUE, &s, &error));
  g_assert_cmpstr(s, ==, "NaN");
  g_assert_true(rok_json_get_string(&root, "empty", TRUE, &s, &error));
  g_assert_cmpstr(s, ==, "");
  g_assert_no_error(error);
  /* Members of the file keep their places. */
  g_assert_false(rok_json_get_string(&root, "layers", TRUE, &s, &error));
  assert_error(&error, ROK_ERROR_INPUT, "x.json:5:13: \"layers\": must be a string, not 2");
}

static void test_override_errors(void) {
  g_autoptr(RokJsonDoc) doc = parse_ok("{\"micro_batch\": 1, \"layers\": 2, \"gpu\": {\"memory\": \"1GiB\"}}");
  g_autoptr(GError) error = NULL;
  g_auto(RokJsonObj) root = {0}, gpu = {0};
  guint64 u = 0;
  g_assert_true(rok_json_doc_set(doc, "micro_batch=abc", "--set micro_batch=abc", &error));
  g_assert_true(rok_json_doc_set(doc, "gpu={\"memory\": \"3Gx\"}", "--set gpu={...}", &error));
  g_assert_true(rok_json_doc_set(doc, "extra.sub=1", "--set extra.sub=1", &error));
  g_assert_no_error(error);
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_false(rok_json_get_uint(&root, "micro_batch", TRUE, 1, G_MAXUINT64, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "--set micro_batch=abc: \"micro_batch\": must be a positive integer, not \"abc\"");
  g_assert_true(rok_json_child(&root, "gpu", TRUE, &gpu, &error));
  g_assert_false(rok_json_get_size(&gpu, "memory", TRUE, &u, &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "--set gpu={...}: \"gpu.memory\": invalid size \"3Gx\": unknown unit \"Gx\" (expected B, kB, MB, "
               "GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)");
  rok_json_error(&error, doc, "extra", "not expected");
  assert_error(&error, ROK_ERROR_INPUT, "--set extra.sub=1: \"extra\": not expected");

  g_assert_false(rok_json_doc_set(doc, "=3", "--set =3", &error));
  assert_error(&error, ROK_ERROR_USAGE, "--set =3: expected KEY=VALUE, such as micro_batch=8");
  g_assert_false(rok_json_doc_set(doc, "x", "--set x", &error));
  assert_error(&error, ROK_ERROR_USAGE, "--set x: expected KEY=VALUE, such as micro_batch=8");
  g_assert_false(rok_json_doc_set(doc, "a..b=1", "--set a..b=1", &error));
  assert_error(&error, ROK_ERROR_USAGE,
               "--set a..b=1: invalid key \"a..b\" (expected names separated by dots, such as gpu.memory)");
  g_assert_false(rok_json_doc_set(doc, "layers.x=1", "--set layers.x=1", &error));
  assert_error(&error, ROK_ERROR_USAGE, "--set layers.x=1: \"layers\" is not an object");
  g_assert_false(rok_json_doc_set(doc, "layers=99999999999999999999", "--set layers=99999999999999999999", &error));
  assert_error(&error, ROK_ERROR_INPUT,
               "--set layers=99999999999999999999: integer 99999999999999999999 does not fit in 64 bits");
  /* Failed assignments changed nothing. */
  g_assert_true(rok_json_get_uint(&root, "layers", TRUE, 1, 100, &u, &error));
  g_assert_cmpuint(u, ==, 2);

  g_autoptr(RokJsonDoc) array = parse_ok("[1]");
  g_assert_false(rok_json_doc_set(array, "a=1", "--set a=1", &error));
  assert_error(&error, ROK_ERROR_USAGE, "--set a=1: x.json does not hold a JSON object");
}

/* ---- format ---- */

static void check_format_of(const char *text, const char *expected_message) {
  g_autoptr(RokJsonDoc) doc = parse_ok(text);
  g_auto(RokJsonObj) root = {0};
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_json_root(doc, &root, &error));
  gboolean ok = rok_json_check_format(&root, "rok-trace/1", &error);
  if (expected_message == NULL) {
    g_assert_no_error(error);
    g_assert_true(ok);
    return;
  }
  g_assert_false(ok);
  assert_error(&error, ROK_ERROR_FORMAT, expected_message);
}

static void test_check_format(void) {
  check_format_of("{\"format\": \"rok-trace/1\"}", NULL);
  check_format_of("{\"name\": \"gpt\"}", "x.json: no \"format\" member: not a rok-trace/1 file");
  check_format_of("{\"format\": \"rok-trace/2\"}",
                  "x.json:1:12: \"format\": format \"rok-trace/2\" is newer than this version of rok reads "
                  "(expected \"rok-trace/1\")");
  check_format_of("{\"format\": \"rok-trace/10\"}",
                  "x.json:1:12: \"format\": format \"rok-trace/10\" is newer than this version of rok reads "
                  "(expected \"rok-trace/1\")");
  check_format_of("{\"format\": \"rok-plan/1\"}",
                  "x.json:1:12: \"format\": expected format \"rok-trace/1\", found \"rok-plan/1\"");
  check_format_of("{\"format\": \"rok-trace/0\"}",
                  "x.json:1:12: \"format\": expected format \"rok-trace/1\", found \"rok-trace/0\"");
  check_format_of("{\"format\": 1}", "x.json:1:12: \"format\": expected format \"rok-trace/1\", found 1");
}

/* ---- writing ---- */

static char *serialise_double(double v) {
  json_object *number = rok_json_new_double(v);
  char *text = g_strdup(json_object_to_json_string_ext(number, JSON_C_TO_STRING_PLAIN));
  json_object_put(number);
  return text;
}

static void check_double(double v, const char *expected) {
  g_autofree char *text = serialise_double(v);
  g_assert_cmpstr(text, ==, expected);
}

static void test_doubles(void) {
  check_double(0.1, "0.10000000000000001");
  check_double(1.0 / 3, "0.33333333333333331");
  check_double(2.0, "2.0");
  check_double(1e300, "1.0000000000000001e+300");
  check_double(-1.5e-7, "-1.4999999999999999e-07");
  check_double(NAN, "null");
  check_double(INFINITY, "null");
  /* A process-wide format set elsewhere does not change rok's output. */
  json_c_set_serialization_double_format("%.3g", JSON_C_OPTION_GLOBAL);
  check_double(1.0 / 3, "0.33333333333333331");
  json_c_set_serialization_double_format(NULL, JSON_C_OPTION_GLOBAL);
  /* Every double survives the trip through text exactly. */
  double v = 1e-300;
  for (int i = 0; i < 680; i++, v *= -2.7) {
    g_autofree char *text = serialise_double(v);
    g_assert_cmpfloat(g_ascii_strtod(text, NULL), ==, v);
  }
}

static json_object *sample_value(void) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "format", json_object_new_string("rok-plan/1"));
  json_object_object_add(root, "path", json_object_new_string("a/b \u00e9 \"q\""));
  json_object_object_add(root, "bytes", json_object_new_uint64(G_MAXUINT64));
  json_object_object_add(root, "ratio", rok_json_new_double(0.1));
  json_object_object_add(root, "bad", rok_json_new_double(NAN));
  json_object *list = json_object_new_array();
  json_object_array_add(list, json_object_new_int64(-3));
  json_object_array_add(list, json_object_new_boolean(TRUE));
  json_object_object_add(root, "list", list);
  return root;
}

static void test_write_read(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("rok-json-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "plan.json", NULL);
  json_object *value = sample_value();
  g_autofree char *text = rok_json_to_string(value);
  g_assert_cmpstr(text, ==,
                  "{\n  \"format\": \"rok-plan/1\",\n  \"path\": \"a/b \u00e9 \\\"q\\\"\",\n"
                  "  \"bytes\": 18446744073709551615,\n  \"ratio\": 0.10000000000000001,\n  \"bad\": null,\n"
                  "  \"list\": [\n    -3,\n    true\n  ]\n}\n");
  g_assert_true(rok_json_write_file(value, path, &error));
  g_assert_true(rok_json_write_file(value, path, &error)); /* replaces */
  g_assert_no_error(error);
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, &error);
  g_assert_no_error(error);
  g_assert_true(json_object_equal(rok_json_doc_root(doc), value) == 0 ? FALSE : TRUE);
  g_autofree char *again = rok_json_to_string(rok_json_doc_root(doc));
  g_assert_cmpstr(again, ==, text);
  g_autofree char *null_text = rok_json_to_string(NULL);
  g_assert_cmpstr(null_text, ==, "null\n");
  json_object_put(value);
  g_assert_cmpint(g_remove(path), ==, 0);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

static guint count_entries(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  while (g_dir_read_name(d) != NULL)
    n++;
  return n;
}

static void test_write_failure(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("rok-json-XXXXXX", &error);
  g_autofree char *missing = g_build_filename(dir, "no", "such", "plan.json", NULL);
  g_autofree char *sub = g_build_filename(dir, "sub", NULL);
  json_object *value = sample_value();
  g_assert_false(rok_json_write_file(value, missing, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, "cannot write "));
  g_assert_nonnull(strstr(error->message, missing));
  g_clear_error(&error);
  /* A directory in the way: the rename fails and the temporary file goes. */
  g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
  g_assert_false(rok_json_write_file(value, sub, &error));
  g_assert_nonnull(error);
  g_assert_cmpuint(count_entries(dir), ==, 1);
  json_object_put(value);
  g_rmdir(sub);
  g_rmdir(dir);
}

static void test_load_errors(void) {
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_json_doc_load("/nonexistent/rok/model.json", &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "/nonexistent/rok/model.json"));
  g_clear_error(&error);
  g_assert_null(rok_json_doc_load("/", &error)); /* a directory */
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
}

/* ---- robustness ---- */

static void assert_located(const GError *error) {
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  if (g_str_has_prefix(error->message, "x.json: empty document"))
    return;
  g_autoptr(GRegex) located = g_regex_new("^x\\.json:[0-9]+:[0-9]+: [^ ]", 0, 0, NULL);
  if (!g_regex_match(located, error->message, 0, NULL))
    g_error("not located: %s", error->message);
}

/* Every prefix of a document, and every single-byte corruption of it, is
 * either parsed or rejected with a located message; never a crash. */
static void test_prefixes_and_corruptions(void) {
  gsize length = strlen(model_text);
  for (gsize n = 0; n <= length; n++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(RokJsonDoc) doc = rok_json_doc_parse("x.json", model_text, n, &error);
    if (doc == NULL)
      assert_located(error);
    else
      g_assert_cmpuint(n, >=, length - 1); /* only the whole object (with or without its newline) parses */
  }
  static const char replacements[] = {'{', '}', '[', ']', '"', ',', ':', '\\', '-', '0', 'e', '\'', '\x80', '\n'};
  g_autofree char *copy = g_strdup(model_text);
  guint parsed = 0;
  for (gsize i = 0; i < length; i++) {
    for (gsize r = 0; r < G_N_ELEMENTS(replacements); r++) {
      copy[i] = replacements[r];
      g_autoptr(GError) error = NULL;
      g_autoptr(RokJsonDoc) doc = rok_json_doc_parse("x.json", copy, length, &error);
      if (doc == NULL)
        assert_located(error);
      else
        parsed++;
    }
    copy[i] = model_text[i];
  }
  g_assert_cmpuint(parsed, >, 0);
}

/* A trace-sized document: parsing and the duplicate check stay linear, and
 * an error near the end is still located exactly. */
static void test_large_document(void) {
  const guint n = 50000;
  GString *text = g_string_new("{\"format\": \"rok-trace/1\", \"ops\": [\n");
  for (guint i = 0; i < n; i++)
    g_string_append_printf(text,
                           "  {\"name\": \"op%u\", \"flops\": %u000, \"bytes\": \"%uKiB\", \"inputs\": [%u, %u]}%s\n",
                           i, i + 1, i + 1, i, i + 1, i + 1 < n ? "," : "");
  g_string_append(text, "]}\n");
  gint64 start = g_get_monotonic_time();
  g_autoptr(GError) error = NULL;
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse("big.json", text->str, text->len, &error);
  g_assert_no_error(error);
  g_test_message("%.1f MB parsed in %.0f ms", text->len / 1e6, (g_get_monotonic_time() - start) / 1e3);
  g_auto(RokJsonObj) root = {0};
  json_object *ops = NULL;
  g_assert_true(rok_json_root(doc, &root, &error));
  g_assert_true(rok_json_get_array(&root, "ops", TRUE, &ops, &error));
  g_assert_cmpuint(json_object_array_length(ops), ==, n);
  g_auto(RokJsonObj) last = {0};
  g_assert_true(rok_json_element(&root, "ops", ops, n - 1, &last, &error));
  g_assert_false(rok_json_get_uint(&last, "bytes", TRUE, 0, G_MAXUINT64, &(guint64){0}, &error));
  g_autofree char *expected =
      g_strdup_printf("big.json:%u:51: \"ops[%u].bytes\": must be a non-negative integer, not \"%uKiB\"", n + 1,
                      n - 1, n);
  g_assert_cmpstr(error->message, ==, expected);
  /* A duplicate at the very end is found too. */
  g_clear_error(&error);
  g_string_truncate(text, text->len - 3);
  g_string_append(text, ", {\"a\": 1, \"a\": 2}]}");
  g_assert_null(rok_json_doc_parse("big.json", text->str, text->len, &error));
  g_assert_nonnull(strstr(error->message, "duplicate key \"a\""));
  g_string_free(text, TRUE);
}

/* What keeps a hostile file from taking gigabytes: 128 MiB of text at most
 * (checked before reading: /dev/zero never ends), and 4 Mi values, an
 * object counting as 8, located at the value past the limit. */
static void test_limits(void) {
  g_autoptr(GError) error = NULL;
  GString *text = g_string_new("[");
  for (guint i = 0; i < 4u << 20; i++)
    g_string_append(text, i ? ",0" : "0");
  g_string_append(text, "]");
  g_assert_null(rok_json_doc_parse("x.json", text->str, text->len, &error));
  /* The array is value 1: the zero at byte 1 + 2·(4Mi - 1) is one too many. */
  g_autofree char *expected = g_strdup_printf("x.json:1:%u: too many values (more than 4194304, an object "
                                              "counting as 8)", 2 + 2 * ((4u << 20) - 1));
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  g_string_assign(text, "{\"k\": [");
  for (guint i = 0; i < (1u << 19); i++)
    g_string_append(text, i ? ",{}" : "{}");
  g_string_append(text, "]}");
  g_assert_null(rok_json_doc_parse("x.json", text->str, text->len, &error));
  g_assert_nonnull(strstr(error->message, "too many values"));
  g_clear_error(&error);
  /* A syntax error before the limit is reported as such. */
  g_string_assign(text, "[1, 2, x");
  g_assert_null(rok_json_doc_parse("x.json", text->str, text->len, &error));
  g_assert_cmpstr(error->message, ==, "x.json:1:8: unexpected character");
  g_clear_error(&error);
  g_string_free(text, TRUE);

  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "rok-test-huge-XXXXXX", NULL);
  int fd = g_mkstemp(path);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(ftruncate(fd, (128 << 20) + 1), ==, 0); /* sparse: nothing is written */
  close(fd);
  g_assert_null(rok_json_doc_load(path, &error));
  g_autofree char *too_large = g_strdup_printf("%s: too large for a JSON document (rok reads at most 128 MiB; "
                                               "134217729 bytes)", path);
  g_assert_cmpstr(error->message, ==, too_large);
  g_clear_error(&error);
  g_unlink(path);
  if (g_file_test("/dev/zero", G_FILE_TEST_EXISTS)) {
    g_assert_null(rok_json_doc_load("/dev/zero", &error));
    g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
    g_assert_cmpstr(error->message, ==, "/dev/zero: too large for a JSON document (rok reads at most 128 MiB; "
                                        "more than that)");
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/json/syntax/positions", test_syntax_positions);
  g_test_add_func("/json/syntax/strict", test_syntax_strict);
  g_test_add_func("/json/syntax/duplicate-keys", test_duplicate_keys);
  g_test_add_func("/json/syntax/integer-overflow", test_integer_overflow);
  g_test_add_func("/json/syntax/nesting", test_nesting);
  g_test_add("/json/get/type-errors", Model, NULL, model_setup, test_type_errors, model_teardown);
  g_test_add("/json/get/missing", Model, NULL, model_setup, test_missing_and_defaults, model_teardown);
  g_test_add("/json/get/arrays", Model, NULL, model_setup, test_arrays_and_elements, model_teardown);
  g_test_add("/json/get/unknown-keys", Model, NULL, model_setup, test_unknown_keys, model_teardown);
  g_test_add("/json/error/paths", Model, NULL, model_setup, test_error_paths, model_teardown);
  g_test_add_func("/json/get/units", test_get_units);
  g_test_add_func("/json/get/messages", test_messages);
  g_test_add_func("/json/override/apply", test_overrides);
  g_test_add_func("/json/override/errors", test_override_errors);
  g_test_add_func("/json/format", test_check_format);
  g_test_add_func("/json/write/doubles", test_doubles);
  g_test_add_func("/json/write/round-trip", test_write_read);
  g_test_add_func("/json/write/failure", test_write_failure);
  g_test_add_func("/json/load/errors", test_load_errors);
  g_test_add_func("/json/robust/prefixes", test_prefixes_and_corruptions);
  g_test_add_func("/json/robust/large", test_large_document);
  g_test_add_func("/json/robust/limits", test_limits);
  return g_test_run();
}
