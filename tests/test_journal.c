/* Journal files (server/journal.c): records come back as written, and a
 * journal cut anywhere or damaged anywhere reads as its whole records up
 * to the fault, never past it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../server/internal.h"

/* Writes three records to a journal in a fresh folder; returns its bytes. */
static uint8_t *three_records(size_t *len, size_t offsets[4])
{
    char dir[] = "/tmp/clothd-journal-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char err[200];
    int fd = cd_journal_create(dir, "j", err, sizeof err);
    cr_assert_geq(fd, 0, "%s", err);
    const char *bodies[3] = {"first", "", "the third record, a little longer"};
    for (int i = 0; i < 3; i++)
        cr_assert(cd_journal_append(fd, (uint8_t)(i + 1), bodies[i], strlen(bodies[i]), err, sizeof err),
                  "%s", err);
    cr_assert(cd_journal_close(fd, err, sizeof err), "%s", err);
    char path[64];
    snprintf(path, sizeof path, "%s/j.cdj", dir);
    uint8_t *data = NULL;
    cr_assert_eq(cd_data_file_read(dir, "j", ".cdj", &data, len, err, sizeof err), CD_FILE_OK, "%s",
                 err);
    unlink(path);
    rmdir(dir);
    size_t at = 0;
    cd_journal_rec rec;
    for (int i = 0; i < 3; i++) {
        offsets[i] = at < 16 ? 16 : at;
        cr_assert_eq(cd_journal_record(data, *len, &at, &rec), CD_JOURNAL_RECORD);
    }
    offsets[3] = at;
    return data;
}

Test(journal, records_should_come_back_as_written)
{
    size_t len = 0, offsets[4];
    uint8_t *data = three_records(&len, offsets);
    cr_assert_eq(cd_journal_check_preamble(data, len, NULL, 0), CD_OK);
    size_t at = 0;
    cd_journal_rec rec;
    const char *bodies[3] = {"first", "", "the third record, a little longer"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cd_journal_record(data, len, &at, &rec), CD_JOURNAL_RECORD);
        cr_assert_eq(rec.kind, i + 1);
        cr_assert_eq(rec.len, strlen(bodies[i]));
        cr_assert_eq(memcmp(rec.body, bodies[i], rec.len), 0);
    }
    cr_assert_eq(cd_journal_record(data, len, &at, &rec), CD_JOURNAL_END);
    cr_assert_eq(at, len);
    free(data);
}

Test(journal, a_cut_anywhere_should_keep_exactly_the_whole_records_before_it)
{
    size_t len = 0, offsets[4];
    uint8_t *data = three_records(&len, offsets);
    for (size_t cut = 16; cut < len; cut++) {
        size_t at = 0;
        cd_journal_rec rec;
        int whole = 0;
        cd_journal_next next;
        while ((next = cd_journal_record(data, cut, &at, &rec)) == CD_JOURNAL_RECORD)
            whole++;
        int expected = 0;
        while (expected < 3 && offsets[expected + 1] <= cut)
            expected++;
        cr_assert_eq(whole, expected, "cut at %zu: %d whole records", cut, whole);
        cr_assert_eq(next, cut == offsets[expected] ? CD_JOURNAL_END : CD_JOURNAL_TORN, "cut at %zu", cut);
    }
    free(data);
}

Test(journal, a_flipped_byte_should_end_the_journal_at_its_record)
{
    size_t len = 0, offsets[4];
    uint8_t *data = three_records(&len, offsets);
    for (size_t i = 16; i < len; i++) {
        data[i] ^= 0x04;
        int damaged = 0;
        while (damaged < 3 && offsets[damaged + 1] <= i)
            damaged++;
        size_t at = 0;
        cd_journal_rec rec;
        int whole = 0;
        while (cd_journal_record(data, len, &at, &rec) == CD_JOURNAL_RECORD)
            whole++;
        cr_assert_eq(whole, damaged, "byte %zu: %d records read before the damaged one", i, whole);
        data[i] ^= 0x04;
    }
    char err[200];
    data[9] ^= 1;
    cr_assert_eq(cd_journal_check_preamble(data, len, err, sizeof err), CD_E_INVALID_ARGUMENT);
    cr_assert(strstr(err, "header: checksum mismatch") != NULL, "%s", err);
    free(data);
}
