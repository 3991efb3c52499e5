#!/usr/bin/env perl
# Helpers of run.sh over runtests' TAP files (see mpi-core/CONFORMANCE.md).
#
#   tap.pl lists TAP BUILD SRC NAME [DONE]
#       Writes a test list called NAME into every directory of the build
#       tree BUILD that holds a test TAP reports failed (and into the
#       directories above it), so that `runtests -tests=NAME` runs those
#       tests again and nothing else. Each failed test's line is copied from
#       its directory's testlist (BUILD's if configure made one, else SRC's):
#       the k-th failure of "dir/prog np" is the k-th line of that program
#       and rank count. Failures the retry TAP file DONE ran already are
#       left out (runtests gives up after a run of timeouts, so a retry may
#       take several rounds). Prints how many tests the lists hold.
#
#   tap.pl compare OURS[,RETRY] MPICH[,RETRY]
#       Compares the two sides on the tests both ran. A side's RETRY file
#       (the TAP of a `lists` run) replaces the result of each test it ran
#       again: a test counts as passed if it passed alone.
use strict;
use warnings;

# A TAP file's tests in order: [name ("dir/prog np"), k (its occurrence),
# passed, skipped]. A program that did not build has no rank count in
# runtests' TAP: it is reported with np "?".
sub tests_of {
    my ($file) = @_;
    open my $f, '<', $file or die "$file: $!\n";
    my (@out, %seen);
    while (<$f>) {
        next unless /^(not )?ok\s+\d*\s*- \.\/(\S+) ?(\d*)(.*)$/;
        my ($fail, $prog, $np, $rest) = ($1, $2, $3, $4);
        my $name = $prog . ' ' . ($np eq '' ? '?' : $np);
        push @out, [$name, ++$seen{$name}, !$fail, $rest =~ /# SKIP/ ? 1 : 0];
    }
    return @out;
}

# Results of one side: "name#k" => 1 (passed) or 0; skipped tests left out.
sub results {
    my ($spec) = @_;
    my ($main, $retry) = split /,/, $spec;
    my %r;
    my %failed_ks;    # name => the k of each failure, in order
    for my $t (tests_of($main)) {
        my ($name, $k, $ok, $skip) = @$t;
        next if $skip;
        $r{"$name#$k"} = $ok ? 1 : 0;
        push @{ $failed_ks{$name} }, $k unless $ok;
    }
    if ($retry && -f $retry) {
        # The retry ran the failures only, in order: its i-th "name" is the
        # i-th failure of that name.
        my %i;
        for my $t (tests_of($retry)) {
            my ($name, undef, $ok, $skip) = @$t;
            next if $skip;
            my $k = $failed_ks{$name}[ $i{$name}++ ];
            $r{"$name#$k"} = $ok ? 1 : 0 if defined $k;
        }
    }
    # A program that did not build fails at every rank count the other
    # side ran it with: resolved in `compare`.
    return \%r;
}

sub compare {
    my @side = (results($_[0]), results($_[1]));
    # "prog ?" (not built): one failure for each of the other side's counts.
    for my $s (0, 1) {
        for my $key (grep { /^\S+ \?#/ } keys %{ $side[$s] }) {
            (my $prog = $key) =~ s/ \?#\d+$//;
            delete $side[$s]{$key};
            for my $other (grep { /^\Q$prog\E \d+#/ } keys %{ $side[1 - $s] }) {
                $side[$s]{$other} = 0 unless exists $side[$s]{$other};
            }
        }
    }
    my %all = map { $_ => 1 } keys %{ $side[0] }, keys %{ $side[1] };
    my @common = sort grep { exists $side[0]{$_} && exists $side[1]{$_} } keys %all;
    my ($po, $pm) = (0, 0);
    for (@common) { $po += $side[0]{$_}; $pm += $side[1]{$_}; }
    printf "common tests: %d; passed: ours %d, MPICH %d\n", scalar @common, $po, $pm;
    my $show = sub { (my $n = $_[0]) =~ s/#1$//; $n };
    for (@common) {
        next if $side[0]{$_} == $side[1]{$_};
        printf "  %-50s ours %s, MPICH %s\n", $show->($_), map { $_ ? 'pass' : 'FAIL' } $side[0]{$_}, $side[1]{$_};
    }
    my @both_fail = grep { !$side[0]{$_} && !$side[1]{$_} } @common;
    printf "failed on both sides: %s\n", join(' ', map { $show->($_) } @both_fail) if @both_fail;
    my @only = sort grep { !(exists $side[0]{$_} && exists $side[1]{$_}) } keys %all;
    printf "run by one side only: %s\n", join(' ', map { $show->($_) . (exists $side[0]{$_} ? ' (ours)' : ' (MPICH)') } @only)
        if @only;
}

sub lists {
    my ($tap, $build, $src, $listname, $done) = @_;
    # How many failures of each name DONE retried (its i-th "name" is the
    # i-th failure of that name, as in `results`).
    my %retried;
    if ($done && -f $done) {
        $retried{ $_->[0] }++ for tests_of($done);
    }
    # dir => [[prog, np, k], ...] of the failures.
    my %want;
    for my $t (tests_of($tap)) {
        my ($name, $k, $ok, $skip) = @$t;
        next if $ok || $skip;
        next if $retried{$name} && $retried{$name}-- > 0;
        my ($path, $np) = split / /, $name;
        next if $np eq '?';    # did not build: running it again changes nothing
        my ($dir, $prog) = $path =~ m{^(.*)/([^/]+)$} or next;
        push @{ $want{$dir} }, [$prog, $np, $k];
    }
    # Old lists of this name go first.
    system('find', "$build/", '-name', $listname, '-delete') == 0 or die "cannot clear old lists\n";
    my (%lines, $n);
    for my $dir (sort keys %want) {
        my $list = -s "$build/$dir/testlist" ? "$build/$dir/testlist" : "$src/$dir/testlist";
        open my $f, '<', $list or die "$list: $!\n";
        my %seen;
        my %pick = map { ("$_->[0] $_->[1]#$_->[2]" => 1) } @{ $want{$dir} };
        while (my $line = <$f>) {
            (my $l = $line) =~ s/#.*//;
            my ($prog, $np) = split ' ', $l;
            next unless defined $prog && defined $np && $np =~ /^\d+$/;
            my $key = "$prog $np#" . ++$seen{"$prog $np"};
            if ($pick{$key}) {
                push @{ $lines{$dir} }, $l =~ s/\s+$//r;
                $n++;
            }
        }
        # The directories above it list it.
        my @parts = split m{/}, $dir;
        for my $i (0 .. $#parts) {
            my $parent = $i ? join('/', @parts[0 .. $i - 1]) : '.';
            push @{ $lines{$parent} }, $parts[$i] unless grep { $_ eq $parts[$i] } @{ $lines{$parent} || [] };
        }
    }
    for my $dir (keys %lines) {
        open my $o, '>', "$build/$dir/$listname" or die "$build/$dir/$listname: $!\n";
        print $o "$_\n" for @{ $lines{$dir} };
    }
    print $n || 0, "\n";
}

my $cmd = shift // '';
if ($cmd eq 'lists' && (@ARGV == 4 || @ARGV == 5)) { lists(@ARGV) }
elsif ($cmd eq 'compare' && @ARGV == 2) { compare(@ARGV) }
else { die "usage: tap.pl lists TAP BUILD SRC NAME [DONE] | tap.pl compare OURS[,RETRY] MPICH[,RETRY]\n" }
